-- Click recording. A request writes its click into its worker's journal
-- (journal.lua: a file of the click spool, mapped into memory, which
-- outlives the worker) and counts it for its hour; it never waits for
-- Redis, nor reads the clock: nginx puts the time in the click's details.
-- The worker's timer appends the journal's entries to the Redis stream in
-- order, several clicks an entry (docs/contract.md), sends the hour counts
-- (accounting.lua), and takes over the journals of workers that have gone.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clickbuf = require("slingshot.clickbuf")
local journals = require("slingshot.journal")
local nginxvar = require("slingshot.nginxvar")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local accounting = require("slingshot.accounting")
local ffi = require("ffi")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local NOTICE = ngx.NOTICE
local now = ngx.now
local sleep = ngx.sleep
local min = math.min
local io_open = io.open
local type = type
local tostring = tostring
local pairs = pairs
local pcall = pcall
local error = error
local ffi_string = ffi.string

local _M = { _VERSION = "0.5.0" }

local STREAM = contract.CLICKS_STREAM
local VERSION = contract.CLICK_RECORD_VERSION

local BUFFERED = metrics.CLICKS_BUFFERED
local ORPHANS = metrics.CLICKS_ORPHAN
local FLUSHED = metrics.CLICKS_FLUSHED
local DROPPED = metrics.CLICKS_DROPPED
local DEPTH = metrics.CLICK_BUFFER_DEPTH
local SPOOL_BYTES = metrics.CLICK_SPOOL_BYTES
local JOURNALS = metrics.CLICK_JOURNALS
local ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "clicks")
local REDIRECT, ORPHAN = journals.REDIRECT, journals.ORPHAN

local CHECK_ABOVE = clickbuf.CHECK_ABOVE
local cut_details = clickbuf.cut_details
-- The request's click details as nginx.conf joins them; empty for HEAD.
local details = nginxvar.reader("slingshot_click")

-- nginx runs its workers as this user when its master runs as root
-- (nginx.conf names none): the spool folder is made theirs.
local WORKER_USER = "nobody"
-- Entries sent in one pipeline: about this many bytes.
local BATCH_BYTES = 2 * 1024 * 1024
-- A journal all sent is replaced by a new one past this size, so that the
-- spool does not grow without end.
local ROTATE_BYTES = 64 * 1024 * 1024
-- How often a worker looks for journals left by workers that have gone.
local SCAN_INTERVAL = 1

-- This worker's journal, and those it has taken over or retired (rotate),
-- by file name.
local own
local adopted = {}
local busy = false
local failures, retry_at = 0, 0
local next_scan, next_sync = 0, 0
local exited = false
local own_error = nil
-- Clicks served while the worker has no journal: dropped, and counted by
-- hour as served under an id prefix of their own (journals.counts), so
-- that the accounting shows them lost; from the first time a journal
-- cannot be made.
local lost = nil
local warned_unset = false
local full_since = nil

local function random_prefix()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        error("click ids: cannot read /dev/urandom: " .. err)
    end
    local bytes = f:read(8)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

local function new_journal()
    return journals.create(config.click_spool_dir, random_prefix(), config.clicks_per_entry,
        config.click_spool_max_mb * 1024 * 1024, config.click_memory_mb * 1024 * 1024)
end

-- Makes the worker's own journal: until one can be made, its clicks are
-- dropped (counted as dropped, and as served for the accounting), and
-- each tick of its timer tries again.
local function make_own()
    local journal, err = new_journal()
    if not journal then
        if err ~= own_error then
            own_error = err
            log(ERR, "clicks will be dropped until a click journal can be made: ", err)
        end
        lost = lost or journals.counts(random_prefix())
        return false
    end
    own, own_error = journal, nil
    log(NOTICE, "click journal ", own.path)
    return true
end

-- Counts a click of `kind` at `t` dropped for want of a journal.
local function count_lost(kind, t)
    metrics.inc(DROPPED)  -- logged when the journal could not be made
    if lost then  -- nil if its id prefix could not be drawn either
        lost:count(kind, t)
    end
end

-- Writes a click, whose details are `len` bytes at `at`, into the journal.
local function write_click(slug, link_id, rule, at, len)
    local journal = own
    if not journal then
        return count_lost(link_id == "" and ORPHAN or REDIRECT, now())
    end
    if len > CHECK_ABOVE then
        at = cut_details(ffi_string(at, len))
        len = #at
    end
    local kind, t = link_id == "" and ORPHAN or REDIRECT, now()
    local seq, err = journal:add(slug, link_id, rule or "", at, len, kind, t)
    if not seq then
        -- Counted served even when the journal has no room, so that the loss shows.
        journal:count(kind, t)
        metrics.inc(DROPPED)
        if not full_since then
            full_since = t
            log(ERR, "clicks dropped until there is room: ", err)
        end
        return
    end
    metrics.inc(BUFFERED)
    if link_id == "" then
        metrics.inc(ORPHANS)
    end
    if exited then
        -- The exit flush has run and no timer runs after it: requests still
        -- finishing in an old worker send their own clicks (or, if it is
        -- sending, leave them to the worker that takes the journal over).
        _M.flush()
    end
end

-- Writes the current request's click on `slug`, served by the link whose
-- id is `link_id` (a string of digits) through `rule` (rules.pick's label,
-- or nil for the link's own url), or an orphan visit (a slug without a
-- link, or whose link is not served) when `link_id` is "", and then `rule`
-- is the visit's kind and domain (domains.orphan_labels), into the
-- worker's journal. A HEAD request, whose details nginx leaves empty, is
-- no click. The timer sends it.
function _M.record(slug, link_id, rule)
    local at, len = details()
    if not at then
        if not warned_unset then
            log(ERR, "$slingshot_click is not set (nginx.conf lacks its map): ",
                "clicks are not recorded")
            warned_unset = true
        end
        return
    elseif len == 0 then
        return
    end
    return write_click(slug, link_id, rule, at, len)
end

-- As record, with `referer` in place of the request's Referer: for a
-- visitor let through a link's password, the page they came from before
-- the password page (unlock.lua). `referer` holds no line feed.
function _M.record_from(slug, link_id, rule, referer)
    local at, len = details()
    if not at or len == 0 then
        return
    end
    local changed = clickbuf.with_referer(ffi_string(at, len), referer)
    return write_click(slug, link_id, rule, changed, #changed)
end

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
        if offset >= upto and not exited then
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

local function report(journal)
    local clicks, bytes = journal:waiting()
    metrics.set_part(DEPTH, journal.prefix, clicks)
    metrics.set_part(SPOOL_BYTES, journal.prefix, bytes)
    metrics.set_part(JOURNALS, journal.prefix, 1)
end

local function forget(journal)
    metrics.drop_part(DEPTH, journal.prefix)
    metrics.drop_part(SPOOL_BYTES, journal.prefix)
    metrics.drop_part(JOURNALS, journal.prefix)
end

local function send(red, journal)
    local ok, err, unreadable = send_entries(red, journal)
    if ok then
        ok, err = send_counts(red, journal)
    end
    return ok, err, unreadable
end

-- Everything every journal of this worker holds, to Redis; a journal taken
-- over is removed once it is all sent.
local function send_all()
    local red, err = redis.connect(config.redis_clicks)
    if not red then
        return nil, err
    end
    local ok = true
    if own then
        ok, err = send(red, own)
    end
    if ok and lost then
        ok, err = send_counts(red, lost)
    end
    for name, journal in pairs(adopted) do
        if not ok then
            break
        end
        local unreadable
        ok, err, unreadable = send(red, journal)
        if ok then
            adopted[name] = nil
            journal:remove()
            forget(journal)
        elseif unreadable then
            -- Kept aside for a person to look at; the others go on.
            log(ERR, "click journal set aside as ", journal.path, ".broken: ", err)
            adopted[name] = nil
            journal:set_aside()
            forget(journal)
            ok, err = true, nil
        end
    end
    if ok then
        redis.release(red)
    else
        red:close()
    end
    return ok, err
end

-- Takes over the journals whose workers have gone (their lock is free).
local function scan()
    local names, unfinished = journals.list(config.click_spool_dir)
    if not names then
        log(ERR, unfinished)
        return
    end
    for _, name in pairs(names) do
        if name ~= own.name and not adopted[name] then
            local journal, err = journals.adopt(config.click_spool_dir, name)
            if journal then
                local clicks = journal:waiting()
                adopted[name] = journal
                report(journal)
                if clicks > 0 then
                    log(WARN, "took over the click journal ", name, " of a worker that has gone: ",
                        clicks, " clicks to send")
                end
            elseif err then
                log(ERR, err)
            end
        end
    end
    journals.remove_unfinished(config.click_spool_dir, unfinished)
end

-- A journal past ROTATE_BYTES (or half its bound) whose clicks Redis has
-- nearly all taken makes way for a new one, and is sent and removed as a
-- journal taken over is: the spool does not grow without end, and a
-- journal holding an outage's clicks is left whole until they are sent.
local function rotate()
    local limit = min(ROTATE_BYTES, own.max_bytes / 2)
    local _, waiting_bytes = own:waiting()
    if own:length() < limit or waiting_bytes > limit / 16 then
        return
    end
    local journal, err = new_journal()
    if not journal then
        log(ERR, err)
        return
    end
    adopted[own.name] = own
    own = journal
end

local function flush(premature)
    local ok, err = send_all()
    if ok then
        failures, retry_at = 0, 0
        full_since = nil
    else
        metrics.inc(ERRORS)
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
    if not own then
        return  -- a worker without a journal has only its lost clicks' counts to send
    end
    if ok and not premature and not exited then
        rotate()
    end
    local t = now()
    if not exited and t >= next_scan then
        next_scan = t + SCAN_INTERVAL
        scan()
    end
    -- Clicks Redis has not taken go to disk every so often: a worker that
    -- dies loses none of them, a machine that stops at most those since.
    if own:waiting() > 0 and t >= next_sync then
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
    if not own and not premature then
        make_own()
    end
    if not own and not (lost and #lost:unsent_counts(now() - accounting.TTL) > 0) then
        return
    end
    if premature then
        exited = true
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
    if own then
        report(own)
    end
    for _, journal in pairs(adopted) do
        report(journal)
    end
end

-- The spool folder, from nginx's master (init phase): made if missing,
-- and given to the workers' user.
function _M.init()
    local ok, err = journals.prepare_dir(config.click_spool_dir, WORKER_USER)
    if not ok then
        error(err, 0)
    end
end

function _M.init_worker()
    make_own()
end

return _M
