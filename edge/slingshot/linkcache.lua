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
--   what changed, so a cache hit never asks Redis and a change shows within
--   EDGE_LINK_CHANGES_INTERVAL. EDGE_CACHE_TTL bounds staleness when
--   notifications are missed (docs/contract.md).
-- * In front of the lrucache, a plain table holds what was answered since
--   that follower last ran: a hit there skips the lrucache's bookkeeping
--   (its LRU queue and TTL check, which go through the FFI). The follower
--   empties it (tick), and evictions reach it too.
local lrucache = require("resty.lrucache")
local clear_table = require("table.clear")
local config = require("slingshot.config")
local metrics = require("slingshot.metrics")
local linklookup = require("slingshot.linklookup")

local error = error

local _M = { _VERSION = "0.3.0" }

local HITS = metrics.CACHE_HITS
local NEGATIVE_HITS = metrics.CACHE_NEGATIVE_HITS
local MISSES = metrics.CACHE_MISSES
local EVICTIONS = metrics.CACHE_EVICTIONS

-- Cached in place of a link that does not exist (linklookup.lua answers it).
local MISSING = linklookup.MISSING

local cache
-- slug -> link (or MISSING) answered from the cache since the last tick.
local recent = {}
-- Bumped by every eviction: a lookup that overlapped one is not cached.
local generation = 0
-- Whether the change stream's follower knows where it is (linkchanges.lua);
-- what is cached while it does not may miss a change.
local following = false
-- Whether the cache may hold values that changed without this worker
-- seeing the notification: cached while `following` was false.
local unsure = false

function _M.init_worker()
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
    cache:set(slug, value, value == MISSING and config.negative_ttl or config.cache_ttl)
end

-- Returns the link of `slug`, a cache key: the slug on the default domain,
-- "host/slug" on another (domains.lua); false when it is unknown; nil and
-- an error when Redis could not be asked.
function _M.get(slug)
    local value = recent[slug]
    if value == nil then
        local stale
        value, stale = cache:get(slug)
        if value ~= nil then
            recent[slug] = value
        elseif stale == MISSING then
            linklookup.refresh_later(slug)
            value = MISSING
        end
    end
    if value == nil then
        metrics.inc(MISSES)
        local err
        value, err = linklookup.lookup(slug)
        if value == nil then
            return nil, err
        end
    elseif value == MISSING then
        metrics.inc(NEGATIVE_HITS)
    else
        metrics.inc(HITS)
    end
    if value == MISSING then
        return false
    end
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
-- before it knew may have missed a change: forget it all.
function _M.found_changes()
    following = true
    if unsure then
        generation = generation + 1
        cache:flush_all()
        clear_table(recent)
        unsure = false
    end
end

-- The change follower's tick: TTLs apply again from here.
function _M.tick()
    clear_table(recent)
end

return _M
