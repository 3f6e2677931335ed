package.path = "./?.lua;" .. package.path
local visitor = require("slingshot.visitor")

-- Real User-Agent strings, and the browser Shlink 5.1 names for each
-- (its Browser::matchFromUserAgent), but where the comment says otherwise.
local BROWSERS = {
    -- Chrome on Windows, macOS, Linux, ChromeOS, Android, iOS.
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36", "chrome" },
    { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36", "chrome" },
    { "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36", "chrome" },
    { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.6778.135 Mobile Safari/537.36", "chrome" },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) CriOS/131.0.6778.134 Mobile/15E148 Safari/604.1", "chrome" },
    -- Firefox on Windows, Linux, Android; on iOS (FxiOS: Shlink says safari).
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "firefox" },
    { "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        "firefox" },
    { "Mozilla/5.0 (Android 14; Mobile; rv:133.0) Gecko/133.0 Firefox/133.0", "firefox" },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) FxiOS/133.0 Mobile/15E148 Safari/605.1.15", "firefox" },
    -- Edge (Chromium), on Android, legacy EdgeHTML; on iOS (EdgiOS: Shlink says safari).
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36 Edg/131.0.2903.86", "edge" },
    { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Mobile Safari/537.36 EdgA/131.0.0.0", "edge" },
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/70.0.3538.102 Safari/537.36 Edge/18.19045", "edge" },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) Version/17.0 EdgiOS/131.2903.92 Mobile/15E148 Safari/605.1.15",
        "edge" },
    -- Safari on macOS, iPhone, iPad.
    { "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        .. "Version/18.2 Safari/605.1.15", "safari" },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 18_2 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) Version/18.2 Mobile/15E148 Safari/604.1", "safari" },
    { "Mozilla/5.0 (iPad; CPU OS 17_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) "
        .. "Version/17.0 Mobile/15E148 Safari/604.1", "safari" },
    -- Opera (Chromium), Opera on Android, Opera Mini, Presto.
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36 OPR/116.0.0.0", "opera" },
    { "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Mobile Safari/537.36 OPR/86.0.0.0", "opera" },
    { "Opera/9.80 (Android; Opera Mini/36.2.2254/119.132; U; id) Presto/2.12.423 Version/12.16",
        "opera" },
    { "Opera/9.80 (Windows NT 6.1; WOW64) Presto/2.12.388 Version/12.18", "opera" },
    -- Android's own browser, and a WebView (which says Chrome).
    { "Mozilla/5.0 (Linux; U; Android 4.0.3; ko-kr; LG-L160L Build/IML74K) AppleWebKit/534.30 "
        .. "(KHTML, like Gecko) Version/4.0 Mobile Safari/534.30", "android_browser" },
    { "Mozilla/5.0 (Linux; Android 14; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 "
        .. "Chrome/131.0.6778.135 Mobile Safari/537.36", "chrome" },
    -- None of the six: Samsung Internet, Vivaldi, Yandex, UC, headless Chrome,
    -- Internet Explorer, an app's web view on iOS, crawlers, curl, nothing.
    { "Mozilla/5.0 (Linux; Android 14; SAMSUNG SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36", "" },
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/131.0.0.0 Safari/537.36 Vivaldi/7.0.3495.27", "" },
    { "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Chrome/130.0.0.0 YaBrowser/24.12.0.0 Safari/537.36", "" },
    { "Mozilla/5.0 (Linux; U; Android 10; en-US; RMX2185) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "Version/4.0 Chrome/78.0.3904.108 UCBrowser/13.4.0.1306 Mobile Safari/537.36", "" },
    { "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        .. "HeadlessChrome/131.0.0.0 Safari/537.36", "" },
    { "Mozilla/5.0 (Windows NT 10.0; WOW64; Trident/7.0; rv:11.0) like Gecko", "" },
    { "Mozilla/5.0 (iPhone; CPU iPhone OS 17_7 like Mac OS X) AppleWebKit/605.1.15 "
        .. "(KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/490.0.0.40.107]", "" },
    { "Mozilla/5.0 (Linux; Android 6.0.1; Nexus 5X Build/MMB29P) AppleWebKit/537.36 "
        .. "(KHTML, like Gecko) Chrome/131.0.6778.139 Mobile Safari/537.36 "
        .. "(compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "" },
    { "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", "" },
    { "curl/8.5.0", "" },
    { "", "" },
}

describe("visitor.browser", function()
    it("names the browser of each real User-Agent as Shlink does, but where said", function()
        for i, case in ipairs(BROWSERS) do
            assert.equal(case[2], visitor.browser(case[1]), i .. ": " .. case[1])
        end
        assert.equal("", visitor.browser(nil))
    end)

    it("names only what a browser condition may hold", function()
        local known = { [""] = true }
        for _, name in ipairs(visitor.BROWSERS) do
            known[name] = true
        end
        for _, case in ipairs(BROWSERS) do
            assert.is_true(known[visitor.browser(case[1])], case[1])
        end
    end)
end)

describe("visitor.devices", function()
    it("tells ChromeOS from Linux, both desktops", function()
        assert.same({ chromeos = true, desktop = true }, visitor.devices(BROWSERS[3][1]))
        assert.same({ linux = true, desktop = true }, visitor.devices(BROWSERS[7][1]))
        assert.same({ android = true, mobile = true }, visitor.devices(BROWSERS[4][1]))
    end)
end)
