-- Asking Redis for the links the cache (linkcache.lua) does not hold.
--
-- * Concurrent misses share Redis round trips: those that arrive together
--   are asked for in one MGET, and a slug already being asked for is not
--   asked again, so a storm on one slug is one lookup per worker at a time.
-- * Unknown slugs whose negative entry expired are asked again from a
--   timer (refresh_later), while the cache answers them as unknown.
-- Every answer goes to the cache that init_worker was given (its keep).
local clear_table = require("table.clear")
local semaphore = require("ngx.semaphore")
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local linkvalue = require("slingshot.linkvalue")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local null = ngx.null
local timer_at = ngx.timer.at
local now = ngx.now
local pairs = pairs
local pcall = pcall
local unpack = unpack

local _M = { _VERSION = "0.3.0" }

local KEY_PREFIX = contract.LINK_KEY_PREFIX
local VISITS_PREFIX = contract.VISITS_KEY_PREFIX

local LOOKUPS = metrics.REDIS_LOOKUPS
local LOOKUP_ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "lookup")

-- The answer for a link that does not exist.
_M.MISSING = {}
local MISSING = _M.MISSING

-- The cache the answers go to: linkcache.lua, with keep(slug, value, since)
-- and generation().
local cache
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
-- Until when an unknown slug is not believed: for a while after Redis
-- failed this worker or a replica was out of step. A link made during an
-- outage waits in the dashboard's outbox until the publisher gets it
-- through (it retries twice a second, and waits up to REDIS_WAIT_TIMEOUT_MS
-- for a replica); until then its slug is answered 503, not 404.
local DOUBT_SECONDS = 5
local doubted_until = 0

function _M.init_worker(answers_to)
    cache = answers_to
    -- Long enough for the batch's own connect and read timeouts to end it.
    wait_timeout = (config.redis_connect_timeout_ms + config.redis_read_timeout_ms) / 1000 + 0.5
    slots = semaphore.new(LOOKUPS_IN_FLIGHT)
end

local function decode(slug, raw)
    if raw == null then
        return MISSING
    end
    local value, bad = linkvalue.decode(raw, VISITS_PREFIX)
    if not value then
        log(ERR, "slug ", slug, ": ", bad, "; answering as unknown")
        return MISSING
    end
    return value
end

-- Redis failed, or answered what may be out of date: unknown slugs are not
-- believed for DOUBT_SECONDS.
function _M.doubt()
    doubted_until = now() + DOUBT_SECONDS
end

-- Whether an unknown slug may be a link Redis does not have yet.
function _M.doubting()
    return now() < doubted_until
end

-- Whether a Redis that answered "no such key" can be believed: a primary,
-- or a replica in step with its primary. A replica that lost its primary
-- (a failover under way) lacks the links made since; their slugs are not
-- answered as unknown, nor cached so. Returns nil and why otherwise.
local function in_step(red)
    local role, err = red:role()
    if not role then
        return nil, "redis role: " .. err
    end
    if role[1] == "slave" and role[4] ~= "connected" then
        return nil, "the replica is not in step with its primary (" .. role[4] .. ")"
    end
    return true
end

-- Asks Redis for the links of slugs[1..n] in one round trip (two if some
-- slug is unknown). Returns the raw values, and why a null one may not be
-- believed (nil when it may); or nil and an error.
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
    local doubt
    for i = 1, n do
        if raws[i] == null then
            local _
            _, doubt = in_step(red)
            if doubt then
                _M.doubt()
            elseif _M.doubting() then
                doubt = "Redis was away or behind a moment ago: a slug it lacks may be a change"
                    .. " not delivered yet"
            end
            break
        end
    end
    if doubt then
        red:close()
    else
        redis.release(red)
    end
    return raws, doubt
end

local function new_batch()
    return { n = 0, slugs = {}, values = {}, waiters = 0, generation = cache.generation() }
end

-- Runs a batch: one Redis round trip for all its slugs, whose results go
-- to the cache, and to every request waiting for them. `failed`: do not
-- ask, only release the waiters with batch.err.
local function run(batch, failed)
    local raws, err, doubt
    if not failed then
        raws, err = fetch(batch.slugs, batch.n)
        doubt = raws and err
    end
    for i = 1, batch.n do
        local slug = batch.slugs[i]
        if inflight[slug] == batch then
            inflight[slug] = nil
        end
        local raw = raws and raws[i]
        if raw and not (doubt and raw == null) then
            local value = decode(slug, raw)
            batch.values[slug] = value
            cache.keep(slug, value, batch.generation)
        end
    end
    if not raws or doubt then
        if not raws then
            _M.doubt()
        end
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

-- Looks slug up with the batch its miss joins: a link, MISSING, or nil and
-- an error. The first miss of a batch asks Redis at once if no batch is out
-- (LOOKUPS_IN_FLIGHT); otherwise it waits for that one to come back, and
-- the misses arriving meanwhile join its batch, asked for all at once
-- (MGET) while they wait. So a lone miss costs one round trip and a storm
-- of them a few MGETs. A slug already in a batch is not asked again. (No
-- ngx.sleep(0) to gather misses: without OpenResty's delayed-events patch,
-- as in Debian's ngx_lua, every call logs a warning.)
function _M.lookup(slug)
    local batch = inflight[slug]
    -- One asked before a change was read may have been answered before the
    -- change: a miss from here asks again (a link made a moment ago).
    if batch and batch.generation ~= cache.generation() then
        batch = nil
    end
    if not batch then
        batch = open_batch
        if not batch then
            batch = new_batch()
            batch.n, batch.slugs[1] = 1, slug
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
        local batch = new_batch()
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

-- Asks Redis again for `slug`, whose negative entry expired, from a timer.
function _M.refresh_later(slug)
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

return _M
