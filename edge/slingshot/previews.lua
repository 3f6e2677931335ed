-- A link's social preview (docs/contract.md, "Links": preview_title,
-- preview_description, preview_image): the crawlers that apps send to
-- unfurl a shared link, told apart by their User-Agent, and the page they
-- are answered with, whose Open Graph and Twitter card tags make the card.
-- Pure logic: no ngx, so busted tests it directly.
local html = require("slingshot.html")
local memo = require("slingshot.memo")

local type = type
local find = string.find
local lower = string.lower
local match = string.match
local escape = html.escape

local _M = { _VERSION = "0.1.0" }

-- What a link-preview crawler's User-Agent holds (lower-cased, looked for
-- as plain text): the unfurlers of chat, social and mail apps, each a
-- crawler by the maintained list the importer marks bots with
-- (crawlerdetect; edge/t/test_previews.py holds them to it), but
-- Bluesky's, which that list lacks. Search
-- engines are not here: they keep getting the redirect, so that the
-- destination, not a card, is what they index; nor is anything an app's
-- own browser sends (Snapchat's, Pinterest's app, Instagram's), whose
-- visitors are people.
_M.CRAWLERS = {
    "facebookexternalhit", "facebot", "twitterbot", "linkedinbot", "slackbot", "slack-imgproxy",
    "discordbot", "whatsapp", "telegrambot", "applebot", "pinterestbot", "pinterest.com/bot",
    "redditbot", "skypeuripreview", "microsoftpreview", "embedly", "iframely", "vkshare",
    "kakaotalk-scrap", "mastodon/", "misskey/", "pleroma", "cardyb", "google-pagerenderer",
    "developers.google.com/+/web/snippet", "bitlybot", "flipboardproxy", "xing-contenttabreceiver",
    "mattermost-bot", "bingpreview",
}
local CRAWLERS = _M.CRAWLERS

local function is_crawler(ua)
    if ua == nil or ua == "" then
        return false
    end
    ua = lower(ua)
    for i = 1, #CRAWLERS do
        if find(ua, CRAWLERS[i], 1, true) then
            return true
        end
    end
    return false
end

-- Whether a request's User-Agent (or nil) is a link-preview crawler's;
-- kept by the header's value, as a visitor's seldom changes.
_M.crawler = memo.of(is_crawler)

local UPLOADED = "^/_preview/%x+%.%a+$"

-- The longest text of each part the page takes (the dashboard's limits).
_M.TITLE_MAX = 200
_M.DESCRIPTION_MAX = 500

local function text(value, most)
    if type(value) ~= "string" or value == "" or #value > most * 4 then
        return nil
    end
    return value
end

-- The preview of a decoded link's value (its preview_* fields), or nil
-- when it has none. `safe_url` tells a URL the page may name.
function _M.of(value, safe_url)
    local title = text(value.preview_title, _M.TITLE_MAX)
    local description = text(value.preview_description, _M.DESCRIPTION_MAX)
    -- An absolute URL, or the path of an image uploaded to the dashboard,
    -- which this edge serves on the link's own domain (doors.preview_image).
    local image = value.preview_image
    if not (safe_url(image) or type(image) == "string" and find(image, UPLOADED)) then
        image = nil
    end
    if not (title or description or image) then
        return nil
    end
    return { title = title, description = description, image = image }
end

local function meta(attribute, name, content)
    if not content then
        return ""
    end
    return "<meta " .. attribute .. "=\"" .. name .. "\" content=\"" .. escape(content) .. "\">"
end

-- The page a crawler is answered with for `preview` (of's), in `lang`:
-- the short URL (`short_url`) is the card's own address, and the way on
-- (`onward`) is the destination, or the short URL for a link behind a
-- password, whose destination the card does not give away.
function _M.page(lang, preview, short_url, onward)
    local title = preview.title or short_url
    local image = preview.image
    if image and find(image, UPLOADED) then
        image = match(short_url, "^https?://[^/]+") .. image
    end
    local card = image and "summary_large_image" or "summary"
    local tags = meta("property", "og:type", "website")
        .. meta("property", "og:url", short_url)
        .. meta("property", "og:title", title)
        .. meta("property", "og:description", preview.description)
        .. meta("property", "og:image", image)
        .. meta("name", "twitter:card", card)
        .. meta("name", "twitter:title", title)
        .. meta("name", "twitter:description", preview.description)
        .. meta("name", "twitter:image", image)
        .. meta("name", "description", preview.description)
    return html.head(lang, escape(title), tags)
        .. "<h1>" .. escape(title) .. "</h1>"
        .. (preview.description and "<p>" .. escape(preview.description) .. "</p>" or "")
        .. "<p><a href=\"" .. escape(onward) .. "\" rel=\"nofollow\">"
        .. escape(onward) .. "</a></p>"
        .. html.FOOT
end

return _M
