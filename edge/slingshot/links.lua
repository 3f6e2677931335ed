-- The per-worker link cache: an lrucache in front of Redis.
--
-- * Unknown slugs are cached too (for EDGE_NEGATIVE_TTL), so a flood of
--   random slugs costs one Redis lookup per slug per TTL. Once that entry
--   has expired the slug is still answered as unknown, at once, while a
--   timer asks Redis again: a bot probing the same unknown slugs never
--   waits on Redis, nor does a wave of them expiring together cost each
--   request a wait for a lookup.
-- * Concurrent misses share Redis round trips: those that arrive together
--   are asked for in one MGET, and a slug already being asked for is not
--   asked again, so a storm on one slug is one lookup per worker at a time.
-- * Every worker tails the stream slingshot:link-changes from a timer and
--   evicts what changed, so a cache hit never asks Redis and a change shows
--   within EDGE_LINK_CHANGES_INTERVAL. EDGE_CACHE_TTL bounds staleness when
--   notifications are missed (docs/contract.md).
-- * In front of the lrucache, a plain table holds what was answered since
--   that timer last ran: a hit there skips the lrucache's bookkeeping (its
--   LRU queue and TTL check, which go through the FFI). The timer empties
--   it, and evictions reach it too.
local lrucache = require("resty.lrucache")
local clear_table = require("table.clear")
local semaphore = require("ngx.semaphore")
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local link = require("slingshot.link")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local domains = require("slingshot.domains")
local robots = require("slingshot.robots")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local null = ngx.null
local timer_at = ngx.timer.at
local now = ngx.now
local pairs = pairs
local error = error
local unpack = unpack

local _M = { _VERSION = "0.2.0" }

local KEY_PREFIX = contract.LINK_KEY_PREFIX
local VISITS_PREFIX = contract.VISITS_KEY_PREFIX
local CHANGES = contract.LINK_CHANGES_STREAM
local DOMAINS = contract.DOMAINS_KEY
local CHANGES_BATCH = 1000

local HITS = metrics.CACHE_HITS
local NEGATIVE_HITS = metrics.CACHE_NEGATIVE_HITS
local MISSES = metrics.CACHE_MISSES
local LOOKUPS = metrics.REDIS_LOOKUPS
local LOOKUP_ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "lookup")
local CHANGES_ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "changes")
local EVICTIONS = metrics.CACHE_EVICTIONS

-- Cached in place of a link that does not exist.
local MISSING = {}

local cache
-- slug -> link (or MISSING) answered from the cache since the last tick.
local recent = {}
-- Misses are looked up in batches: { n, slugs, values, err, waiters, sema,
-- generation }. slug -> the batch that is looking it up.
local inflight = {}
-- The batch still taking misses, if any.
local open_batch
-- Unknown slugs whose negative entry expired, to be asked again by the
-- refresh_unknown timer (running while `refreshing`).
local to_refresh = {}
local refreshing = false
local BATCH_MAX = 100
-- One batch out at a time per worker: the misses that arrive meanwhile all
-- join the next one, so a storm of misses costs few round trips, each with
-- many slugs.
local LOOKUPS_IN_FLIGHT = 1
local slots
local wait_timeout
-- Bumped by every eviction: a lookup that overlapped one is not cached.
local generation = 0
-- Where this worker is in the change stream; nil until it has asked, and
-- again after Redis failed it.
local last_change_id
-- Whether the cache may hold values that changed without this worker
-- seeing the notification: cached while last_change_id was nil.
local unsure = false
local tailing = false
-- When this worker last read the domains; nil: it must read them again.
local domains_read_at

function _M.init_worker()
    local err
    cache, err = lrucache.new(config.cache_size)
    if not cache then
        error("link cache: " .. err)
    end
    -- Long enough for the batch's own connect and read timeouts to end it.
    wait_timeout = (config.redis_connect_timeout_ms + config.redis_read_timeout_ms) / 1000 + 0.5
    slots = semaphore.new(LOOKUPS_IN_FLIGHT)
    domains.use({}, domains.fallback(config), false)
    local ok
    ok, err = ngx.timer.at(0, _M.follow_changes)
    if ok then
        ok, err = ngx.timer.every(config.link_changes_interval, _M.follow_changes)
    end
    if not ok then
        log(ERR, "link changes timer: ", err)
    end
end

local function decode(slug, raw)
    if raw == null then
        return MISSING
    end
    local value, bad = link.decode(raw, VISITS_PREFIX)
    if not value then
        log(ERR, "slug ", slug, ": ", bad, "; answering as unknown")
        return MISSING
    end
    return value
end

-- Asks Redis for the links of slugs[1..n] in one round trip.
local function fetch(slugs, n)
    local red, err = redis.connect(config.redis_links)
    if not red then
        return nil, err
    end
    metrics.inc(LOOKUPS, n)
    local raws
    if n == 1 then
        local raw
        raw, err = red:get(KEY_PREFIX .. slugs[1])
        -- false is an error reply (LOADING from a replica resyncing, say): not an answer
        raws = raw and { raw } or nil
    else
        local keys = {}
        for i = 1, n do
            keys[i] = KEY_PREFIX .. slugs[i]
        end
        raws, err = red:mget(unpack(keys))
    end
    if not raws then
        red:close()
        return nil, "redis get: " .. err
    end
    redis.release(red)
    return raws
end

-- Runs a batch: one Redis round trip for all its slugs, whose results go
-- to the cache, and to every request waiting for them. `failed`: do not
-- ask, only release the waiters with batch.err.
local function run(batch, failed)
    local raws, err
    if not failed then
        raws, err = fetch(batch.slugs, batch.n)
    end
    local fresh = generation == batch.generation
    if not last_change_id and fresh then
        unsure = true
    end
    for i = 1, batch.n do
        local slug = batch.slugs[i]
        if inflight[slug] == batch then
            inflight[slug] = nil
        end
        if raws then
            local value = decode(slug, raws[i])
            batch.values[slug] = value
            if fresh then
                cache:set(slug, value, value == MISSING and config.negative_ttl or config.cache_ttl)
            end
        end
    end
    if not raws then
        metrics.inc(LOOKUP_ERRORS)
        batch.err = batch.err or err
    end
    if batch.sema then
        batch.sema:post(batch.waiters)
    end
end

local function result(batch, slug)
    local value = batch.values[slug]
    if value == nil then
        return nil, batch.err
    end
    return value
end

-- Looks slug up with the batch its miss joins. The first miss of a batch
-- asks Redis at once if no batch is out (LOOKUPS_IN_FLIGHT); otherwise it
-- waits for that one to come back, and the misses arriving meanwhile join
-- its batch, asked for all at once (MGET) while they wait. So a lone miss
-- costs one round trip and a storm of them a few MGETs. A slug already
-- in a batch is not asked again. (No ngx.sleep(0) to gather misses: without
-- OpenResty's delayed-events patch, as in Debian's ngx_lua, every call logs
-- a warning.)
local function lookup(slug)
    local batch = inflight[slug]
    if not batch then
        batch = open_batch
        if not batch then
            batch = { n = 1, slugs = { slug }, values = {}, waiters = 0, generation = generation }
            inflight[slug] = batch
            open_batch = batch
            local ok, err = slots:wait(wait_timeout)
            if open_batch == batch then
                open_batch = nil
            end
            if ok then
                run(batch)
                slots:post(1)
            else
                batch.err = "waiting for Redis to answer other lookups: " .. err
                run(batch, true)
            end
            return result(batch, slug)
        end
        batch.n = batch.n + 1
        batch.slugs[batch.n] = slug
        inflight[slug] = batch
        if batch.n >= BATCH_MAX then
            open_batch = nil
        end
    end
    if not batch.sema then
        batch.sema = semaphore.new()
    end
    batch.waiters = batch.waiters + 1
    local ok, err = batch.sema:wait(wait_timeout * 2)
    if not ok then
        return nil, "waiting for a lookup in flight: " .. err
    end
    return result(batch, slug)
end

-- Asks Redis again for the unknown slugs in to_refresh, a batch at a time,
-- with the same slot as the lookups of requests.
local function refresh_queued()
    while true do
        local batch = { n = 0, slugs = {}, values = {}, waiters = 0, generation = generation }
        for slug in pairs(to_refresh) do
            batch.n = batch.n + 1
            batch.slugs[batch.n] = slug
            if batch.n == BATCH_MAX then
                break
            end
        end
        if batch.n == 0 then
            return
        end
        local ok, err = slots:wait(wait_timeout)
        if not ok then
            return nil, "waiting for Redis to answer other lookups: " .. err
        end
        run(batch)
        slots:post(1)
        -- Out of the set only now, so that visits meanwhile do not queue
        -- them again; if Redis failed them, their next visit does.
        for i = 1, batch.n do
            to_refresh[batch.slugs[i]] = nil
        end
    end
end

-- Timer handler. Whatever stops it, the set is left empty, so that the
-- next visits queue their slugs and start it again.
local function refresh_unknown(premature)
    if not premature then
        local ok, done, err = pcall(refresh_queued)
        if not ok or err then
            log(WARN, "refreshing unknown slugs: ", ok and err or done)
        end
    end
    clear_table(to_refresh)
    refreshing = false
end

local function refresh_later(slug)
    if to_refresh[slug] then
        return
    end
    to_refresh[slug] = true
    if not refreshing then
        local ok, err = timer_at(0, refresh_unknown)
        if not ok then
            to_refresh[slug] = nil
            log(WARN, "refreshing unknown slugs: ", err)
            return
        end
        refreshing = true
    end
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
            refresh_later(slug)
            value = MISSING
        end
    end
    if value == nil then
        metrics.inc(MISSES)
        local err
        value, err = lookup(slug)
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

local function evict(slug)
    cache:delete(slug)
    recent[slug] = nil
    metrics.inc(EVICTIONS)
end

-- Evicts the slugs of change entries after `last_change_id`. Returns how
-- many entries it read, or nil and an error.
local function read_changes(red)
    if not last_change_id then
        -- Start at the end of the stream. Anything cached before this worker
        -- knew where the end was may have missed a change: forget it all.
        local newest, err = red:xrevrange(CHANGES, "+", "-", "COUNT", 1)
        if not newest then
            return nil, "redis xrevrange: " .. err
        end
        last_change_id = newest[1] and newest[1][1] or "0-0"
        domains_read_at = nil
        robots.forget()
        if unsure then
            generation = generation + 1
            cache:flush_all()
            clear_table(recent)
            unsure = false
        end
        return 0
    end
    local res, err = red:xread("COUNT", CHANGES_BATCH, "STREAMS", CHANGES, last_change_id)
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
        local slug, host
        for j = 1, #fields - 1, 2 do
            local name = fields[j]
            if name == "slug" then
                slug = fields[j + 1]
            elseif name == "domain" then
                host = fields[j + 1]
            end
        end
        if slug then
            evict(host and host .. "/" .. slug or slug)
        elseif host then
            -- The domain's settings or its robots.txt changed.
            domains_read_at = nil
            robots.forget(host)
        end
        last_change_id = entry[1]
    end
    return #entries
end

-- Timer handler: evict what the dashboard changed since the last tick.
function _M.follow_changes(premature)
    clear_table(recent)  -- TTLs apply again from here
    if premature or tailing then
        return
    end
    tailing = true
    local count
    local red, err = redis.connect(config.redis_links)
    if red then
        repeat
            count, err = read_changes(red)
        until count ~= CHANGES_BATCH
        local reusable = true
        if count and (not domains_read_at or now() - domains_read_at > config.cache_ttl) then
            local ok, skipped = domains.load(red, DOMAINS, config)
            if ok then
                domains_read_at = now()
                for i = 1, #skipped do
                    log(ERR, skipped[i], "; answering its requests as the default domain's")
                end
            else
                -- Asked again after EDGE_CACHE_TTL or the next change of a
                -- domain; the links' cache and the change stream's position
                -- stay as they are.
                log(ERR, "domains: ", skipped)
                domains_read_at = now()
                reusable = false
            end
        end
        if count and reusable then
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
