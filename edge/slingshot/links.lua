-- The per-worker link cache: an lrucache in front of Redis, with negative
-- caching so a flood of unknown slugs costs one Redis lookup per slug per
-- EDGE_NEGATIVE_TTL.
local lrucache = require("resty.lrucache")
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local link = require("slingshot.link")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local null = ngx.null
local error = error

local _M = { _VERSION = "0.1.0" }

_M.KEY_PREFIX = "slingshot:link:"

-- Cached in place of a link that does not exist.
local MISSING = {}

local cache

function _M.init_worker()
    local err
    cache, err = lrucache.new(config.cache_size)
    if not cache then
        error("link cache: " .. err)
    end
end

local function fetch(slug)
    local red, err = redis.connect()
    if not red then
        return nil, err
    end
    local raw
    raw, err = red:get(_M.KEY_PREFIX .. slug)
    if raw == nil then
        red:close()
        return nil, "redis get: " .. err
    end
    redis.release(red)
    if raw == null then
        return MISSING
    end
    local value, bad = link.decode(raw)
    if not value then
        log(ERR, "slug ", slug, ": ", bad, "; answering as unknown")
        return MISSING
    end
    return value
end

-- Returns the link, false when there is none, or nil and an error when Redis
-- could not be asked.
function _M.get(slug)
    local value = cache:get(slug)
    if value == nil then
        local err
        value, err = fetch(slug)
        if value == nil then
            return nil, err
        end
        if value == MISSING then
            cache:set(slug, MISSING, config.negative_ttl)
        else
            cache:set(slug, value, config.cache_ttl)
        end
    end
    if value == MISSING then
        return false
    end
    return value
end

function _M.evict(slug)
    cache:delete(slug)
end

return _M
