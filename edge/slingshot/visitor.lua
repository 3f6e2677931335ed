-- What a request's headers say of the visitor, for redirect rules
-- (rules.lua): the device classes and the browser a User-Agent names, the
-- languages an Accept-Language header prefers. Pure Lua: busted tests it,
-- and rules.lua keeps what these make by the header's value (memo.lua).
--
-- Devices and browsers are told as Shlink tells them (its DeviceType and
-- Browser, which read the User-Agent with donatj/phpuseragentparser), by
-- plain-text tokens looked for in a fixed order.
local type = type
local find = string.find
local lower = string.lower
local gmatch = string.gmatch
local match = string.match
local tonumber = tonumber
local sort = table.sort

local _M = { _VERSION = "0.1.0" }

-- A device condition's values, and a browser condition's.
_M.DEVICES = { "ios", "android", "mobile", "desktop", "windows", "macos", "linux", "chromeos" }
_M.BROWSERS = { "chrome", "firefox", "edge", "safari", "opera", "android_browser" }

-- User-Agent tokens of each device condition. iPadOS presents itself as a
-- Mac, and is served as one. ChromeOS says "X11; CrOS": it is chromeos,
-- not linux, as in Shlink.
local IOS = { "iPhone", "iPad", "iPod" }
local ANDROID = { "Android" }
local WINDOWS = { "Windows" }
local MACOS = { "Macintosh" }
local CHROMEOS = { "CrOS" }
local LINUX = { "Linux", "X11" }
local MOBILE_HINT = { "Mobile", "Mobi" }

local function has_any(ua, tokens)
    for i = 1, #tokens do
        if find(ua, tokens[i], 1, true) then
            return true
        end
    end
    return false
end

-- The device classes of a User-Agent, as a set of condition values.
function _M.devices(ua)
    local set = {}
    if ua == nil or ua == "" then
        return set
    end
    local ios = has_any(ua, IOS)
    local android = not ios and has_any(ua, ANDROID)
    if ios then
        set.ios = true
    elseif android then
        set.android = true
    elseif has_any(ua, WINDOWS) then
        set.windows = true
    elseif has_any(ua, MACOS) then
        set.macos = true
    elseif has_any(ua, CHROMEOS) then
        set.chromeos = true
    elseif has_any(ua, LINUX) then
        set.linux = true
    end
    if ios or android or has_any(ua, MOBILE_HINT) then
        set.mobile = true
    elseif set.windows or set.macos or set.chromeos or set.linux then
        set.desktop = true
    end
    return set
end

-- The tokens that name a browser, in the order they decide: the first one
-- found is the browser ("" for one that is none of BROWSERS). Chromium's
-- offspring all say "Chrome/" and "Safari/", so each of them comes before
-- Chrome, and Chrome before Safari; Opera's "OPR/" and Edge's "Edg/" come
-- first of all. Samsung Internet and the like are no browser of the six.
-- Unlike Shlink, Firefox and Edge on iOS (FxiOS, EdgiOS) are firefox and
-- edge, as Chrome on iOS (CriOS) is chrome in both; Shlink has them Safari.
local BROWSER_TOKENS = {
    { "OPR/", "opera" },
    { "Facebot", "" }, { "UCBrowser", "" }, { "YaBrowser", "" }, { "YaApp_Android", "" },
    { "Iceweasel", "firefox" }, { "IceCat", "firefox" },
    { "CriOS/", "chrome" }, { "FxiOS/", "firefox" }, { "EdgiOS/", "edge" },
    { "Edg/", "edge" }, { "EdgA/", "edge" },
    { "MiuiBrowser", "" },
    { "Opera", "opera" },
    { "Kindle", "" }, { "Silk/", "" }, { "NintendoBrowser", "" }, { "Puffin/", "" },
    { "Googlebot", "" }, { "Applebot", "" }, { "IEMobile", "" },
    { "Edge/", "edge" },
    { "Midori", "" }, { "Whale/", "" }, { "Vivaldi", "" }, { "OculusBrowser", "" },
    { "SamsungBrowser", "" }, { "Valve Steam Tenfoot", "" }, { "HeadlessChrome", "" },
    { "Chrome/", "chrome" },
    { "Trident/", "" },
    { "Firefox/", "firefox" },
}

-- The browser a User-Agent names: one of BROWSERS, or "" for none of them
-- (a crawler that gives a "+http" contact, another browser, no header).
-- What is left once no token named one is WebKit's: Android's own browser
-- on Android (its UA has no "Chrome/"), else Safari where it says so.
function _M.browser(ua)
    if type(ua) ~= "string" or find(ua, "+http", 1, true) then
        return ""
    end
    for i = 1, #BROWSER_TOKENS do
        local token = BROWSER_TOKENS[i]
        if find(ua, token[1], 1, true) then
            return token[2]
        end
    end
    if not find(ua, "AppleWebKit", 1, true) then
        return ""
    elseif find(ua, "Android", 1, true) then
        return "android_browser"
    elseif find(ua, "Safari/", 1, true) then
        return "safari"
    end
    return ""
end

local function by_preference(a, b)
    if a.q ~= b.q then
        return a.q > b.q
    end
    return a.at < b.at
end

-- The visitor's languages from an Accept-Language header, lower-cased, in
-- the order of their q-values (highest first, the header's order among
-- equals); those with q=0 (refused) and `*` are left out.
function _M.languages(header)
    local found = {}
    if type(header) ~= "string" then
        return found
    end
    local n = 0
    for item in gmatch(header, "[^,]+") do
        local tag = match(item, "^%s*([%a%d%-]+)")
        if tag then
            local q = 1
            local qs = match(item, ";%s*[qQ]%s*=%s*([%d%.]+)")
            if qs then
                q = tonumber(qs) or 0
            end
            if q > 0 then
                n = n + 1
                found[n] = { tag = lower(tag), q = q, at = n }
            end
        end
    end
    sort(found, by_preference)
    local tags = {}
    for i = 1, n do
        tags[i] = found[i].tag
    end
    return tags
end

return _M
