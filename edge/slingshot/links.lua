-- The per-worker link cache: an lrucache in front of Redis.
--
-- * Unknown slugs are cached too (for EDGE_NEGATIVE_TTL), so a flood of
--   random slugs costs one Redis lookup per slug per TTL.
-- * Concurrent misses on one slug share one Redis lookup per worker: the
--   first request fetches, the others wait on a semaphore for its answer.
-- * Every worker tails the stream slingshot:link-changes from a timer and
--   evicts what changed, so a cache hit never asks Redis and a change shows
--   within EDGE_LINK_CHANGES_INTERVAL. EDGE_CACHE_TTL bounds staleness when
--   notifications are missed (docs/contract.md).
local lrucache = require("resty.lrucache")
local semaphore = require("ngx.semaphore")
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local link = require("slingshot.link")
local metrics = require("slingshot.metrics")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local null = ngx.null
local error = error

local _M = { _VERSION = "0.2.0" }

_M.KEY_PREFIX = "slingshot:link:"
_M.CHANGES = "slingshot:link-changes"
local CHANGES_BATCH = 1000

local HITS = "slingshot_edge_cache_hits_total"
local NEGATIVE_HITS = "slingshot_edge_cache_negative_hits_total"
local MISSES = "slingshot_edge_cache_misses_total"
local LOOKUPS = "slingshot_edge_redis_lookups_total"
local LOOKUP_ERRORS = 'slingshot_edge_redis_errors_total{op="lookup"}'
local CHANGES_ERRORS = 'slingshot_edge_redis_errors_total{op="changes"}'
local EVICTIONS = "slingshot_edge_cache_evictions_total"

-- Cached in place of a link that does not exist.
local MISSING = {}

local cache
-- slug -> { waiters = n, sema = semaphore or nil, value = ..., err = ... }
-- for the lookup in flight.
local inflight = {}
-- Bumped by every eviction: a lookup that overlapped one is not cached.
local generation = 0
-- Where this worker is in the change stream; nil until it has asked, and
-- again after Redis failed it.
local last_change_id
-- Whether the cache may hold values that changed without this worker
-- seeing the notification: cached while last_change_id was nil.
local unsure = false
local tailing = false

function _M.init_worker()
    local err
    cache, err = lrucache.new(config.cache_size)
    if not cache then
        error("link cache: " .. err)
    end
    local ok
    ok, err = ngx.timer.at(0, _M.follow_changes)
    if ok then
        ok, err = ngx.timer.every(config.link_changes_interval, _M.follow_changes)
    end
    if not ok then
        log(ERR, "link changes timer: ", err)
    end
end

local function fetch(slug)
    local red, err = redis.connect()
    if not red then
        return nil, err
    end
    metrics.inc(LOOKUPS)
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

local function lookup(slug)
    local started = generation
    local value, err = fetch(slug)
    if value == nil then
        metrics.inc(LOOKUP_ERRORS)
        return nil, err
    end
    if generation == started then
        if not last_change_id then
            unsure = true
        end
        cache:set(slug, value, value == MISSING and config.negative_ttl or config.cache_ttl)
    end
    return value
end

-- Waits for the lookup another request of this worker has in flight.
local function wait_for(shared)
    if not shared.sema then
        shared.sema = semaphore.new()
    end
    shared.waiters = shared.waiters + 1
    local timeout = (config.redis_connect_timeout_ms + config.redis_read_timeout_ms) / 1000
    local ok, err = shared.sema:wait(timeout)
    if not ok then
        return nil, "waiting for a concurrent lookup: " .. err
    end
    return shared.value, shared.err
end

-- Returns the link; false when it is unknown; nil and an error when Redis
-- could not be asked.
function _M.get(slug)
    local value = cache:get(slug)
    if value ~= nil then
        if value == MISSING then
            metrics.inc(NEGATIVE_HITS)
            return false
        end
        metrics.inc(HITS)
        return value
    end
    metrics.inc(MISSES)
    local err
    local shared = inflight[slug]
    if shared then
        value, err = wait_for(shared)
    else
        shared = { waiters = 0 }
        inflight[slug] = shared
        value, err = lookup(slug)
        inflight[slug] = nil
        if shared.sema then
            shared.value, shared.err = value, err
            shared.sema:post(shared.waiters)
        end
    end
    if value == MISSING then
        return false
    end
    return value, err
end

local function evict(slug)
    cache:delete(slug)
    metrics.inc(EVICTIONS)
end

-- Evicts the slugs of change entries after `last_change_id`. Returns how
-- many entries it read, or nil and an error.
local function read_changes(red)
    if not last_change_id then
        -- Start at the end of the stream. Anything cached before this worker
        -- knew where the end was may have missed a change: forget it all.
        local newest, err = red:xrevrange(_M.CHANGES, "+", "-", "COUNT", 1)
        if not newest then
            return nil, "redis xrevrange: " .. err
        end
        last_change_id = newest[1] and newest[1][1] or "0-0"
        if unsure then
            generation = generation + 1
            cache:flush_all()
            unsure = false
        end
        return 0
    end
    local res, err = red:xread("COUNT", CHANGES_BATCH, "STREAMS", _M.CHANGES, last_change_id)
    if not res then
        return nil, "redis xread: " .. err
    end
    if res == null then
        return 0
    end
    local entries = res[1][2]
    generation = generation + 1
    for i = 1, #entries do
        local entry = entries[i]
        local fields = entry[2]
        for j = 1, #fields - 1, 2 do
            if fields[j] == "slug" then
                evict(fields[j + 1])
            end
        end
        last_change_id = entry[1]
    end
    return #entries
end

-- Timer handler: evict what the dashboard changed since the last tick.
function _M.follow_changes(premature)
    if premature or tailing then
        return
    end
    tailing = true
    local red, err = redis.connect()
    local count = 0
    if red then
        repeat
            count, err = read_changes(red)
        until count ~= CHANGES_BATCH
        if count then
            redis.release(red)
        else
            red:close()
        end
    end
    if not count then
        metrics.inc(CHANGES_ERRORS)
        if last_change_id then
            -- Entries may be trimmed or lost while Redis is away: start over
            -- from the end of the stream (and an empty cache) when it is back.
            log(WARN, "link changes: ", err, "; the cache is dropped when Redis answers again")
            last_change_id = nil
            unsure = true
        end
    end
    tailing = false
end

return _M
