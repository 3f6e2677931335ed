-- Decoding a published link (docs/contract.md) and deciding what the edge
-- answers for it. Pure logic: no ngx, so busted tests it directly.
local cjson = require("cjson.safe")

local type = type
local find = string.find
local gsub = string.gsub
local byte = string.byte
local format = string.format
local floor = math.floor

local _M = { _VERSION = "0.1.0" }

local REDIRECT_STATUSES = { [301] = true, [302] = true, [307] = true, [308] = true }

-- An absolute http(s) URL with nothing a header could be split on.
function _M.safe_url(url)
    return type(url) == "string" and find(url, "^https?://[^/]") ~= nil
        and not find(url, "[%c ]")
end

-- Returns a link table, or nil and a reason when the value breaks the contract.
function _M.decode(raw)
    local value = cjson.decode(raw)
    if type(value) ~= "table" then
        return nil, "link value is not a JSON object"
    end
    local id = value.id
    if type(id) ~= "number" or id < 1 or id ~= floor(id) or id >= 2 ^ 53 then
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
    local expires_at = value.expires_at
    if type(expires_at) ~= "number" then
        expires_at = nil
    end
    return {
        -- As the click records it (clickbuf.lua): the digits, made once here.
        id = format("%d", id),
        url = url,
        status = status,
        active = value.active ~= false,
        expires_at = expires_at,
        forward_query = value.forward_query == true,
    }
end

-- "redirect", "disabled" or "expired" for a decoded link at Unix time `now`
-- (which may be nil for a link without expiry).
function _M.state(link, now)
    if not link.active then
        return "disabled"
    end
    if link.expires_at and now >= link.expires_at then
        return "expired"
    end
    return "redirect"
end

local function percent(c)
    return format("%%%02X", byte(c))
end

-- The Location for a request whose raw query string is `args` (may be nil).
-- The request's query is appended to the target's, before any fragment.
function _M.target(link, args)
    local url = link.url
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
