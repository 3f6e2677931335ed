-- /robots.txt per domain (docs/contract.md, "Domains"): the text the
-- publisher keeps for each domain, allowing only the links open to crawlers. A
-- worker keeps each domain's for EDGE_CACHE_TTL, and drops it when a change
-- notification names the domain; without one (a domain the edge does not
-- know yet, or Redis away) every path is disallowed.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local contract = require("slingshot.contract")

local ngx = ngx
local now = ngx.now
local null = ngx.null

local _M = { _VERSION = "0.1.0" }

_M.DISALLOW_ALL = "User-agent: *\nDisallow: /\n"

local cached = {}  -- host -> { text, until }

function _M.forget(host)
    if host then
        cached[host] = nil
    else
        cached = {}
    end
end

-- The robots.txt of `domain` (domains.lua), and an error when Redis could
-- not be asked (the text is then DISALLOW_ALL).
function _M.text(domain)
    local host = domain.host
    if not host then
        return _M.DISALLOW_ALL
    end
    local entry = cached[host]
    if entry and entry[2] > now() then
        return entry[1]
    end
    local red, err = redis.connect(config.redis_links)
    if not red then
        return _M.DISALLOW_ALL, err
    end
    local text
    text, err = red:get(contract.ROBOTS_KEY_PREFIX .. host)
    if not text then
        red:close()
        return _M.DISALLOW_ALL, "redis get: " .. err
    end
    redis.release(red)
    if text == null then
        text = _M.DISALLOW_ALL
    end
    cached[host] = { text, now() + config.cache_ttl }
    return text
end

return _M
