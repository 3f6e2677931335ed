-- The click timer: a worker's journals (clickspool.lua) to Redis. Each
-- tick appends the entries its journals hold to the stream in order,
-- several clicks an entry (docs/contract.md), sets the hour counts
-- (accounting.lua), removes the journals it took over once they are all
-- sent, rotates its own, looks for journals of workers that have gone,
-- and syncs its own to disk every so often. It runs once more when the
-- worker exits, and sends all there is.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clickspool = require("slingshot.clickspool")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local accounting = require("slingshot.accounting")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local now = ngx.now
local sleep = ngx.sleep
local min = math.min
local type = type
local tostring = tostring
local pairs = pairs
local pcall = pcall

local _M = { _VERSION = "0.1.0" }

local STREAM = contract.CLICKS_STREAM
local VERSION = contract.CLICK_RECORD_VERSION

local FLUSHED = metrics.CLICKS_FLUSHED
local ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "clicks")

-- Entries sent in one pipeline: about this many bytes.
local BATCH_BYTES = 2 * 1024 * 1024
-- How often a worker looks for journals left by workers that have gone.
local SCAN_INTERVAL = 1

local busy = false
local failures, retry_at = 0, 0
local next_scan, next_sync = 0, 0

-- Sends the pipeline; an error on any of its commands is its error.
local function commit(red, what)
    local results, err = red:commit_pipeline()
    if not results then
        return nil, what .. err
    end
    for i = 1, #results do
        local res = results[i]
        if type(res) == "table" and res[1] == false then
            return nil, what .. tostring(res[2])
        end
    end
    return true
end

-- Appends the entries of `journal` not yet in the stream, in order, a
-- pipeline at a time, noting in the journal how far they got. A tick
-- sends what the journal held when it began: clicks served while its
-- pipeline is on the way wait for the next tick, so that under load a
-- tick is one pipeline of whole entries, not a chain of small ones back
-- to back, each a round trip and, with Redis's `appendfsync always`, an
-- fsync. The flush at exit sends all there is.
local function send_entries(red, journal)
    local upto = journal:committed()
    while true do
        local payloads, offset, clicks = journal:unsent(BATCH_BYTES)
        if not payloads then
            if offset then
                return nil, offset, true  -- the journal could not be read
            end
            return true
        end
        red:init_pipeline(#payloads)
        for i = 1, #payloads do
            red:xadd(STREAM, "*", "v", VERSION, "clicks", payloads[i])
        end
        local ok, err = commit(red, "redis xadd: ")
        if not ok then
            return nil, err
        end
        local before = journal.header.sent_clicks
        journal:sent(offset, clicks)
        metrics.inc(FLUSHED, clicks - before)
        if offset >= upto and not clickspool.exited then
            return true
        end
    end
end

-- Sends the hour counts of `journal` (or of the lost clicks) that
-- changed; an error on any of them keeps them all for the next time.
local function send_counts(red, journal)
    local counts = journal:unsent_counts(now() - accounting.TTL)
    if #counts == 0 then
        return true
    end
    local commands = accounting.commands(journal.prefix, counts)
    red:init_pipeline(#commands * 2)
    for i = 1, #commands do
        local c = commands[i]
        red:hset(c[1], c[2], c[3], c[4], c[5])
        red:expire(c[1], accounting.TTL)
    end
    local ok, err = commit(red, "accounting: redis: ")
    if not ok then
        return nil, err
    end
    journal:counts_sent(counts)
    return true
end

local function send(red, journal)
    local ok, err, unreadable = send_entries(red, journal)
    if ok then
        ok, err = send_counts(red, journal)
    end
    return ok, err, unreadable
end

-- Sends the journals taken over, each let go of once it is all sent.
local function send_adopted(red)
    local adopted = clickspool.adopted
    for name, journal in pairs(adopted) do
        local ok, err, unreadable = send(red, journal)
        if ok then
            adopted[name] = nil
            clickspool.retire(journal)
        elseif unreadable then
            -- Kept aside for a person to look at; the others go on.
            log(ERR, "click journal set aside as ", journal.path, ".broken: ", err)
            adopted[name] = nil
            journal:set_aside()
            clickspool.forget(journal)
        else
            return nil, err
        end
    end
    return true
end

-- Everything every journal of this worker holds, to Redis; a journal taken
-- over is removed once it is all sent.
local function send_all()
    local red, err = redis.connect(config.redis_clicks)
    if not red then
        return nil, err
    end
    local ok = true
    local own, lost = clickspool.own, clickspool.lost
    if own then
        ok, err = send(red, own)
    end
    if ok and lost then
        ok, err = send_counts(red, lost)
    end
    if ok then
        ok, err = send_adopted(red)
    end
    if ok then
        redis.release(red)
    else
        red:close()
    end
    return ok, err
end

-- Notes how a flush went: after a failure the next waits, longer each time.
local function note(ok, err, premature)
    if ok then
        failures, retry_at = 0, 0
        clickspool.full_since = nil
        return
    end
    metrics.inc(ERRORS)
    local own = clickspool.own
    if premature and own then
        local clicks = own:waiting()
        log(WARN, "click flush at exit failed, ", clicks, " clicks left in ", own.path,
            " for the next worker: ", err)
    else
        failures = failures + 1
        local delay = min(config.click_retry_max, config.click_flush_interval * 2 ^ failures)
        retry_at = now() + delay
        log(WARN, "click flush failed (retry in ", delay, " s): ", err)
    end
end

-- Leaves a journal in its file alone (an exiting worker's).
local function settle(journal)
    local settled, err = journal:settle()
    if not settled then
        log(ERR, err)
    end
end

local function flush(premature)
    local own = clickspool.own
    if own then  -- first: the ring has room again each tick, Redis there or not
        local copied, copy_err = own:copy()
        if not copied then
            log(ERR, copy_err)
        end
    end
    local ok, err = send_all()
    note(ok, err, premature)
    if not clickspool.own then
        return  -- a worker without a journal has only its lost clicks' counts to send
    end
    local exited = clickspool.exited
    if ok and not premature and not exited then
        clickspool.rotate()
    end
    local t = now()
    if not exited and t >= next_scan then
        next_scan = t + SCAN_INTERVAL
        clickspool.scan()
    end
    -- Clicks Redis has not taken go to disk every so often: a worker that
    -- dies loses none of them, a machine that stops at most those since.
    -- An exiting worker leaves its journal in its file alone.
    own = clickspool.own
    if exited then
        settle(own)
        for _, journal in pairs(clickspool.adopted) do
            settle(journal)  -- one it retired (rotate) has its ring still
        end
        clickspool.drop_spare_ring()
    elseif own:waiting() > 0 and t >= next_sync then
        next_sync = t + config.click_spool_sync_interval
        local synced, sync_err = own:sync()
        if not synced then
            log(ERR, sync_err)
        end
    end
end

-- Timer handler, also run once more when the worker exits (premature),
-- and by requests that finish after that. One flush at a time: another
-- that comes while one runs returns at once (the one at exit waits for it,
-- then runs). Entries that fail stay in the journal (the same click ids)
-- and are sent again with exponential backoff up to EDGE_CLICK_RETRY_MAX
-- seconds; if part of them had reached the stream, the importer drops the
-- repeats by click id.
function _M.flush(premature)
    if not clickspool.own and not premature then
        clickspool.make_own()
    end
    local lost = clickspool.lost
    if not clickspool.own and not (lost and #lost:unsent_counts(now() - accounting.TTL) > 0) then
        return
    end
    if premature then
        clickspool.exited = true
        while busy do
            sleep(0.01)
        end
    elseif busy or now() < retry_at then
        return
    end
    busy = true
    local ok, err = pcall(flush, premature)
    busy = false
    if not ok then
        log(ERR, "click flush: ", err)
    end
    clickspool.report_all()
end

return _M
