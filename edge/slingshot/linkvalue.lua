-- The value of a published link (docs/contract.md, "Links"): decoding it,
-- and deciding what the edge answers for it. Pure logic: no ngx, so busted
-- tests it directly.
local cjson = require("cjson.safe")
local rules = require("slingshot.rules")
local html = require("slingshot.html")
local previews = require("slingshot.previews")

local type = type
local find = string.find
local gsub = string.gsub
local format = string.format
local floor = math.floor
local percent = html.percent

local _M = { _VERSION = "0.2.0" }

local REDIRECT_STATUSES = { [301] = true, [302] = true, [307] = true, [308] = true }
-- The longest password_version the edge takes: letters and digits only.
_M.PASSWORD_VERSION_MAX = 64

-- Every field of a link's value that decode reads, and no other: what the
-- dashboard's publisher writes (edge/t/test_contract.py holds them equal).
_M.FIELDS = { "id", "url", "status", "active", "valid_since", "expires_at", "max_visits",
    "forward_query", "password", "password_version", "unlock_url", "rules", "split", "listed",
    "blocked", "ios_url", "android_url", "expired_url", "preview_title", "preview_description",
    "preview_image" }
local FIELDS = _M.FIELDS

-- An absolute http(s) URL with nothing a header could be split on.
function _M.safe_url(url)
    return type(url) == "string" and find(url, "^https?://[^/]") ~= nil
        and not find(url, "[%c ]")
end

local function whole(value)
    return type(value) == "number" and value >= 1 and value == floor(value) and value < 2 ^ 53
end

-- Whether the link is behind a password, and the version a pass through it
-- is bound to (unlock.lua); or nil and a reason when the value breaks the
-- contract. A password: `password` true, or from an older publisher an
-- `unlock_url`. Anything else there breaks the contract, and the link is
-- answered as unknown rather than served without its password. The version
-- is "" from a publisher before versions, whose passes are bound to the
-- link alone.
local function password_of(value)
    local password = value.password
    if password ~= nil and password ~= cjson.null and type(password) ~= "boolean" then
        return nil, "link password is not a boolean"
    end
    local unlock_url = value.unlock_url
    if unlock_url ~= nil and unlock_url ~= cjson.null and type(unlock_url) ~= "string" then
        return nil, "link unlock_url is not a string"
    end
    local password_version = value.password_version
    if password_version == nil or password_version == cjson.null then
        password_version = ""
    elseif type(password_version) ~= "string" or #password_version > _M.PASSWORD_VERSION_MAX
            or find(password_version, "[^%w]") then
        return nil, "link password_version is not a version"
    end
    return password == true or type(unlock_url) == "string", password_version
end

-- Returns a link table, or nil and a reason when the value breaks the contract.
-- `visits_prefix` is the key prefix of the visit counters (contract.lua);
-- `plain` says the link is active and has no schedule, limit, password or
-- rules, so that a request for it needs no more than its target.
-- An app's targets, which rules.compile puts after the link's own rules (or nil).
local function apps_of(value)
    local ios, android = value.ios_url, value.android_url
    if ios == cjson.null then
        ios = nil
    end
    if android == cjson.null then
        android = nil
    end
    if ios or android then
        return { ios = ios, android = android }
    end
    return nil
end

function _M.decode(raw, visits_prefix)
    local json = cjson.decode(raw)
    if type(json) ~= "table" then
        return nil, "link value is not a JSON object"
    end
    local value = {}
    for i = 1, #FIELDS do
        local name = FIELDS[i]
        value[name] = json[name]
    end
    local id = value.id
    if not whole(id) then
        return nil, "link id is not a positive integer"
    end
    local url = value.url
    if not _M.safe_url(url) then
        return nil, "link url is missing or unsafe"
    end
    local status = value.status
    if status == nil then
        status = 302
    elseif not REDIRECT_STATUSES[status] then
        return nil, "link status is not 301, 302, 307 or 308"
    end
    local expires_at = type(value.expires_at) == "number" and value.expires_at or nil
    local valid_since = type(value.valid_since) == "number" and value.valid_since or nil
    local max_visits = value.max_visits
    if max_visits ~= nil and type(max_visits) ~= "userdata" and not whole(max_visits) then
        return nil, "link max_visits is not a positive integer"
    elseif not whole(max_visits) then
        max_visits = nil
    end
    local locked, password_version = password_of(value)
    if locked == nil then
        return nil, password_version
    end
    local active = value.active ~= false
    -- On a blocklist since it was made (the dashboard's links/flags.py):
    -- true, a 451; "warn", a warning page with a way on (SCREEN_ACTION).
    local listed = value.listed == true and "block" or value.listed == "warn" and "warn" or false
    -- Stopped by the service's staff (the dashboard's moderation/): the
    -- operator's words for the 451 page ("" for the page's own).
    local blocked = value.blocked
    if type(blocked) ~= "string" then
        blocked = nil
    end
    local compiled, bad_rules = rules.compile(value.rules, value.split, _M.safe_url, apps_of(value))
    if bad_rules then
        return nil, "link rules: " .. bad_rules
    end
    -- What a link-preview crawler is shown instead (previews.lua), or nil.
    local preview = previews.of(value, _M.safe_url)
    -- As the click records it (clickbuf.lua): the digits, made once here.
    local digits = format("%d", id)
    return {
        id = digits,
        url = url,
        status = status,
        active = active,
        listed = listed,
        blocked = blocked,
        -- Where a visitor goes once it has expired or used its visits (or nil).
        expired_url = _M.safe_url(value.expired_url) and value.expired_url or nil,
        valid_since = valid_since,
        expires_at = expires_at,
        timed = valid_since ~= nil or expires_at ~= nil,
        max_visits = max_visits,
        visits_key = max_visits and (visits_prefix or "") .. digits,
        forward_query = value.forward_query == true,
        locked = locked,
        password_version = password_version,
        -- rules.compile's, or nil for a link without rules and split.
        rules = compiled,
        preview = preview,
        plain = active and not listed and not blocked and valid_since == nil and expires_at == nil
            and max_visits == nil and not locked and compiled == nil and preview == nil,
    }
end

-- "redirect", "blocked" (stopped by staff, whatever else it is), "listed"
-- or "warned" (on a blocklist: a 451, or a warning), "disabled",
-- "scheduled" (before valid_since) or "expired" for a decoded link at Unix
-- time `now` (which may be nil for a link without valid_since or expires_at).
function _M.state(link, now)
    if link.blocked then
        return "blocked"
    end
    if link.listed then
        return link.listed == "warn" and "warned" or "listed"
    end
    if not link.active then
        return "disabled"
    end
    if link.valid_since and now < link.valid_since then
        return "scheduled"
    end
    if link.expires_at and now >= link.expires_at then
        return "expired"
    end
    return "redirect"
end

-- The Location for a request whose raw query string is `args` (may be nil),
-- to `url` (a rule's target) or else the link's. The request's query is
-- appended to the target's, before any fragment.
function _M.target(link, args, url)
    url = url or link.url
    if not link.forward_query or args == nil or args == "" then
        return url
    end
    local fragment = ""
    local hash = find(url, "#", 1, true)
    if hash then
        fragment = url:sub(hash)
        url = url:sub(1, hash - 1)
    end
    local last = url:sub(-1)
    local sep
    if not find(url, "?", 1, true) then
        sep = "?"
    elseif last == "?" or last == "&" then
        sep = ""
    else
        sep = "&"
    end
    -- nginx passes some raw bytes through in a query; none may reach the header.
    args = gsub(args, "[^!-~]", percent)
    return url .. sep .. args .. fragment
end

return _M
