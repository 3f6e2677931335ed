-- The files each domain has of its own (docs/contract.md, "Domains"): its
-- /robots.txt, which the publisher keeps allowing only the links open to
-- crawlers, and its app-link files at /.well-known/ (Apple's
-- apple-app-site-association, Android's assetlinks.json), which a domain
-- may have or not. A worker keeps each domain's for EDGE_CACHE_TTL, and
-- drops them when a change notification names the domain. Without one (a
-- domain the edge does not know yet, or Redis away), robots.txt disallows
-- every path, and an app-link file is none.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local contract = require("slingshot.contract")

local ngx = ngx
local now = ngx.now
local null = ngx.null

local _M = { _VERSION = "0.2.0" }

_M.DISALLOW_ALL = "User-agent: *\nDisallow: /\n"

-- Each file: its Redis key for a host, and what stands in for none.
local FILES = {
    ["robots.txt"] = { key = function(host) return contract.ROBOTS_KEY_PREFIX .. host end,
        none = _M.DISALLOW_ALL },
}
for _, name in ipairs(contract.APP_FILES) do
    local prefix = contract.APP_FILE_KEY_PREFIX .. name .. ":"
    FILES[name] = { key = function(host) return prefix .. host end, none = false }
end
_M.FILES = FILES

local cached = {}  -- host -> { name -> { text (false: none), until } }

function _M.forget(host)
    if host then
        cached[host] = nil
    else
        cached = {}
    end
end

-- The file `name` of `domain` (domains.lua): its text, or false for none;
-- and an error when Redis could not be asked (the text is then the none).
function _M.get(domain, name)
    local file = FILES[name]
    local host = domain.host
    if not host then
        return file.none
    end
    local mine = cached[host]
    local entry = mine and mine[name]
    if entry and entry[2] > now() then
        return entry[1]
    end
    local red, err = redis.connect(config.redis_links)
    if not red then
        return file.none, err
    end
    local text
    text, err = red:get(file.key(host))
    if not text then
        red:close()
        return file.none, "redis get: " .. err
    end
    redis.release(red)
    if text == null then
        text = file.none
    end
    if not mine then
        mine = {}
        cached[host] = mine
    end
    mine[name] = { text, now() + config.cache_ttl }
    return text
end

-- The robots.txt of `domain`, as get.
function _M.robots(domain)
    return _M.get(domain, "robots.txt")
end

return _M
