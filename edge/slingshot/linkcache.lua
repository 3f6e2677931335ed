-- The per-worker link cache: an lrucache in front of Redis, which edge.lua
-- asks for every visit (get).
--
-- * A miss is asked of Redis by linklookup.lua, in batches shared by the
--   misses that arrive together; what it answers comes back here (keep).
-- * Unknown slugs are cached too (for EDGE_NEGATIVE_TTL), so a flood of
--   random slugs costs one Redis lookup per slug per TTL. Once that entry
--   has expired the slug is still answered as unknown, at once, while
--   linklookup.lua asks Redis again: a bot probing the same unknown slugs
--   never waits on Redis, nor does a wave of them expiring together cost
--   each request a wait for a lookup.
-- * linkchanges.lua tails the stream slingshot:link-changes and evicts
--   what changed, so a cache hit never asks Redis and a change shows as
--   soon as the worker reads it (a blocking read: a millisecond or so).
--   EDGE_CACHE_TTL bounds staleness when notifications are missed
--   (docs/contract.md).
-- * In front of the lrucache, a plain table holds what was answered since
--   that follower last ran: a hit there skips the lrucache's bookkeeping
--   (its LRU queue and TTL check, which go through the FFI). The follower
--   empties it (tick), and evictions reach it too.
local lrucache = require("resty.lrucache")
local clear_table = require("table.clear")
local config = require("slingshot.config")
local metrics = require("slingshot.metrics")
local linklookup = require("slingshot.linklookup")

local ngx = ngx
local now = ngx.now
local error = error

local _M = { _VERSION = "0.3.0" }

local HITS = metrics.CACHE_HITS
local NEGATIVE_HITS = metrics.CACHE_NEGATIVE_HITS
local MISSES = metrics.CACHE_MISSES
local EVICTIONS = metrics.CACHE_EVICTIONS
local STALE_HITS = metrics.CACHE_STALE_HITS

-- linklookup.lua's answer for a link that does not exist.
local MISSING = linklookup.MISSING

local cache
-- slug -> link (or `unknown`) answered from the cache since the last tick.
local recent = {}
-- Bumped by every eviction: a lookup that overlapped one is not cached.
local generation = 0
-- Each entry is a link table or `unknown`, stamped with the epoch it was
-- cached in; an entry of an older epoch counts as expired.
local epoch = 0
-- Cached in place of a link that does not exist, one per epoch.
local unknown = { epoch = epoch, unknown = true }
-- Whether the change stream's follower knows where it is (linkchanges.lua);
-- what is cached while it does not may miss a change. Also this worker's
-- sign that Redis cannot be asked.
local following = false
-- Whether the cache may hold values that changed without this worker
-- seeing the notification: cached while `following` was false.
local unsure = false
-- When the change stream's follower last heard from Redis (its blocking
-- reads end at least every EDGE_LINK_CHANGES_INTERVAL while Redis
-- answers), and how long after that an unknown slug is still believed: a
-- Redis that stopped answering is noticed within it, before the
-- dashboard's request could have given up on it (links/publishing.py).
local heard_at = 0
local belief
local BELIEF_MARGIN = 0.1

function _M.init_worker()
    belief = config.link_changes_interval + BELIEF_MARGIN
    local err
    cache, err = lrucache.new(config.cache_size)
    if not cache then
        error("link cache: " .. err)
    end
    linklookup.init_worker(_M)
end

function _M.generation()
    return generation
end

-- A lookup's answer for `slug` (a link, or MISSING), made by a lookup that
-- started at `since` (a generation): cached unless an eviction came between.
function _M.keep(slug, value, since)
    if since ~= generation then
        return
    end
    if not following then
        unsure = true
    end
    if value == MISSING then
        cache:set(slug, unknown, config.negative_ttl)
    else
        value.epoch, value.confirmed = epoch, now()
        cache:set(slug, value, config.cache_ttl)
    end
end

-- Whether a slug cached as unknown may be answered so: only while the
-- change follower hears from Redis in time, so that a link made since
-- would have evicted it. Otherwise it may be a link made meanwhile that
-- waits to be published (answered 503, as a miss would be). A late
-- follower is not yet a Redis that failed: the slug is asked again, and
-- Redis's "no such key" believed if the follower has heard from it by the
-- time that answer comes (as it has when the machine, not Redis, was
-- slow: its answer was on its way first).
local function believes_unknown()
    return following and now() - heard_at <= belief
end

local NOT_ASKED = "unknown slug not asked again: Redis cannot be read, or could not a moment ago"
local NOT_BELIEVED = "unknown slug not believed: the change stream's follower has not heard"
    .. " from Redis in time"

-- After a failed lookup: the link Redis last gave for `slug` (`stale`, an
-- expired entry, or nil), kept again for EDGE_CACHE_TTL if Redis confirmed
-- it less than EDGE_STALE_TTL ago; nil otherwise.
local function resurrect(slug, stale)
    if stale == nil or stale.unknown then
        return nil
    end
    local left = stale.confirmed + config.stale_ttl - now()
    if left <= 0 then
        return nil
    end
    -- Of this epoch now, or a flapping Redis would be asked for it at
    -- every visit; the next new epoch asks for it again.
    stale.epoch = epoch
    cache:set(slug, stale, left < config.cache_ttl and left or config.cache_ttl)
    metrics.inc(STALE_HITS)
    return stale
end

-- Returns the link of `slug`, a cache key: the slug on the default domain,
-- "host/slug" on another (domains.lua); false when it is unknown; nil and
-- an error when Redis could not be asked and nothing cached may stand in.
function _M.get(slug)
    local value = recent[slug]
    local stale
    if value == nil then
        value, stale = cache:get(slug)
        if value ~= nil and value.epoch ~= epoch then
            value, stale = nil, value
        end
        if value ~= nil then
            recent[slug] = value
        elseif stale and stale.unknown and stale.epoch == epoch and believes_unknown() then
            linklookup.refresh_later(slug)
            value = stale
        end
    end
    if value ~= nil and value.unknown then
        if believes_unknown() then
            metrics.inc(NEGATIVE_HITS)
            return false
        end
        value, stale = nil, value
    end
    if value == nil then
        local doubted = stale and stale.unknown and stale.epoch == epoch
        if doubted and linklookup.doubting() then
            return nil, NOT_ASKED
        end
        metrics.inc(MISSES)
        local err
        value, err = linklookup.lookup(slug)
        if value == nil then
            value = resurrect(slug, stale)
            if value == nil then
                return nil, err
            end
            return value
        end
        if value == MISSING then
            if doubted and not believes_unknown() then
                return nil, NOT_BELIEVED
            end
            return false
        end
        return value
    end
    metrics.inc(HITS)
    return value
end

-- The link of `slug` changed: it is asked of Redis again at its next visit.
-- (Called from linkchanges.lua, which bumps the generation once per read.)
function _M.evict(slug)
    cache:delete(slug)
    recent[slug] = nil
    metrics.inc(EVICTIONS)
end

-- A batch of changes is being read: lookups that started before it are
-- not cached.
function _M.changing()
    generation = generation + 1
end

-- The change follower lost its place in the stream (Redis away): what is
-- cached from here may miss a change.
function _M.lost_changes()
    following = false
    unsure = true
end

-- The change follower knows where the stream ends again. Anything cached
-- before it knew may have missed a change: a new epoch, in which it is
-- all asked again, and served as it stands only if Redis fails that.
function _M.found_changes()
    following = true
    if unsure then
        generation = generation + 1
        epoch = epoch + 1
        unknown = { epoch = epoch, unknown = true }
        clear_table(recent)
        unsure = false
    end
end

-- The change follower heard from Redis just now.
function _M.heard()
    heard_at = now()
end

-- The change follower's tick: TTLs apply again from here.
function _M.tick()
    clear_table(recent)
end

return _M
