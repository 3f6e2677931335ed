package.path = "./?.lua;" .. package.path
local previews = require("slingshot.previews")
local link = require("slingshot.linkvalue")

local function safe(url)
    return type(url) == "string" and url:find("^https?://[^/]") ~= nil
end

describe("previews.of", function()
    it("takes the parts set, and none when none is", function()
        assert.same({ title = "T", image = "https://e.com/i.png" },
            previews.of({ preview_title = "T", preview_image = "https://e.com/i.png" }, safe))
        assert.is_nil(previews.of({ preview_title = "", preview_description = "" }, safe))
        assert.is_nil(previews.of({}, safe))
    end)

    it("leaves out an image that is no safe URL and text that is no text", function()
        assert.is_nil(previews.of({ preview_image = "javascript:alert(1)" }, safe))
        assert.is_nil(previews.of({ preview_title = 5, preview_description = {} }, safe))
    end)
end)

describe("a decoded link's preview", function()
    it("makes the link not plain, so that the crawler's request is looked at", function()
        local value = assert(link.decode('{"id":1,"url":"https://e.com/","preview_title":"Sale"}'))
        assert.same({ title = "Sale" }, value.preview)
        assert.is_false(value.plain)
        value = assert(link.decode('{"id":1,"url":"https://e.com/","preview_title":null}'))
        assert.is_nil(value.preview)
        assert.is_true(value.plain)
    end)
end)

describe("previews.crawler", function()
    it("knows the unfurlers by their real User-Agents", function()
        for _, ua in ipairs({
            "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)",
            "Twitterbot/1.0",
            "LinkedInBot/1.0 (compatible; Mozilla/5.0; Apache-HttpClient +http://www.linkedin.com)",
            "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)",
            "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
            "WhatsApp/2.23.20.0 A",
            "TelegramBot (like TwitterBot)",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_5) AppleWebKit/605.1.15 "
                .. "(KHTML, like Gecko) Version/13.1.1 Safari/605.1.15 "
                .. "(Applebot/0.1; +http://www.apple.com/go/applebot)",
        }) do
            assert.is_true(previews.crawler(ua), ua)
        end
    end)

    it("sends people on, in apps' own browsers too", function()
        for _, ua in ipairs({
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
                .. "(KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/440.0]",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
                .. "(KHTML, like Gecko) Mobile/15E148 Instagram 300.0.0.0",
            "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
            "curl/8.0.1",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "",
        }) do
            assert.is_false(previews.crawler(ua), ua)
        end
        assert.is_false(previews.crawler(nil))
    end)
end)

describe("previews.page", function()
    it("carries the card's tags, every text escaped", function()
        local page = previews.page("en", {
            title = "Sale <b>&\"now\"</b>",
            description = "It's 'on'",
            image = "https://e.com/i.png?a=1&b=2",
        }, "https://s.example/sale", "https://shop.example/?x=1&y=<2>")
        local function has(text)
            return page:find(text, 1, true) ~= nil
        end
        assert.is_true(has('<meta property="og:title" '
            .. 'content="Sale &lt;b&gt;&amp;&quot;now&quot;&lt;/b&gt;">'))
        assert.is_true(has('<meta property="og:description" content="It&#39;s &#39;on&#39;">'))
        assert.is_true(has('<meta property="og:image" content="https://e.com/i.png?a=1&amp;b=2">'))
        assert.is_true(has('<meta property="og:url" content="https://s.example/sale">'))
        assert.is_true(has('<meta name="twitter:card" content="summary_large_image">'))
        assert.truthy(page:find('href="https://shop.example/?x=1&amp;y=&lt;2&gt;"', 1, true))
        assert.falsy(page:find("<b>", 1, true))
    end)

    it("makes an uploaded image's path absolute on the short URL's own host", function()
        local path = "/_preview/" .. string.rep("a", 64) .. ".png"
        local preview = previews.of({ preview_image = path }, safe)
        assert.is_truthy(preview)
        local page = previews.page("en", preview, "https://go.example/x", "https://shop.example/")
        assert.truthy(page:find('content="https://go.example/_preview/' .. string.rep("a", 64)
            .. '.png"', 1, true))
        assert.is_nil(previews.of({ preview_image = "/_preview/../internal/report" }, safe))
        assert.is_nil(previews.of({ preview_image = "/elsewhere.png" }, safe))
    end)

    it("names the short URL when it has no title, and a summary card without an image", function()
        local page = previews.page("de", { description = "Nur Text" }, "https://s.example/x",
            "https://s.example/x")
        assert.truthy(page:find('<meta property="og:title" content="https://s.example/x">', 1,
            true))
        assert.truthy(page:find('<meta name="twitter:card" content="summary">', 1, true))
        assert.falsy(page:find("og:image", 1, true))
        assert.truthy(page:find('<html lang="de">', 1, true))
    end)
end)
