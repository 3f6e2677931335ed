-- A worker's click journals (journal.lua): its own, which its requests
-- write their clicks into (clicks.lua), made when the worker starts and
-- again each tick until it can be, and replaced by a new one once Redis
-- has taken nearly all of a large one (rotate), in the file of one all
-- sent (its spare, retire); those of workers that have gone, taken over
-- (scan); and the hour counts of the clicks it dropped while it had no
-- journal (lost). The timer (clicksend.lua) sends what they hold. The
-- state here is the worker's, shared by its requests and its timer.
local config = require("slingshot.config")
local journals = require("slingshot.journal")
local spooldir = require("slingshot.spooldir")
local hourcounts = require("slingshot.hourcounts")
local clickbuf = require("slingshot.clickbuf")
local metrics = require("slingshot.metrics")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local NOTICE = ngx.NOTICE
local min = math.min
local io_open = io.open
local pairs = pairs
local error = error

local _M = { _VERSION = "0.1.0" }

local DEPTH = metrics.CLICK_BUFFER_DEPTH
local SPOOL_BYTES = metrics.CLICK_SPOOL_BYTES
local JOURNALS = metrics.CLICK_JOURNALS

-- nginx runs its workers as this user when its master runs as root
-- (nginx.conf names none): the spool folder is made theirs.
local WORKER_USER = "nobody"
-- A journal all sent is replaced by a new one past this size, so that the
-- spool does not grow without end.
local ROTATE_BYTES = 64 * 1024 * 1024
-- A journal all sent is kept as the worker's spare, for the next journal
-- to be written into, if it is no larger than this: one that held an
-- outage's clicks is removed.
local SPARE_BYTES = 2 * ROTATE_BYTES

-- This worker's journal (nil until one can be made).
_M.own = nil
-- The journals it has taken over or retired (rotate), by file name.
_M.adopted = {}
-- Clicks served while the worker has no journal: dropped, and counted by
-- hour as served under an id prefix of their own (hourcounts.counts), so
-- that the accounting shows them lost; from the first time a journal
-- cannot be made.
_M.lost = nil
-- Set when the worker exits, once its timer's last flush has begun.
_M.exited = false
-- When the own journal first refused a click for want of room, since the
-- last flush that went through (nil: it has not).
_M.full_since = nil
-- A journal all sent whose file and ring the next journal is written
-- into (the file's pages are in the kernel's memory and its blocks on
-- disk already, the ring's pages mapped: new ones cost more to write), or
-- nil.
_M.spare = nil

local own_error = nil

local function random_prefix()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        error("click ids: cannot read /dev/urandom: " .. err)
    end
    local bytes = f:read(8)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

local memory_error = nil

-- A new journal, its ring in the click memory folder; where no ring can
-- be made there (the tmpfs is full, or missing), in the spool folder:
-- clicks as safe, each page of the ring costing a page fault again.
local function new_journal()
    local dir, prefix = config.click_spool_dir, random_prefix()
    local per_entry, max_bytes = config.clicks_per_entry, config.click_spool_max_mb * 1024 * 1024
    local size, memory = config.click_memory_mb * 1024 * 1024, config.click_memory_dir
    local spare = _M.spare
    if spare then
        _M.spare = nil
        local journal, err = journals.create(dir, prefix, per_entry, max_bytes, size, memory, spare)
        if journal then
            return journal
        end
        log(ERR, err)  -- and the spare is gone: a new file then
    end
    local journal, err = journals.create(dir, prefix, per_entry, max_bytes, size, memory)
    if journal or memory == dir then
        return journal, err
    end
    if err ~= memory_error then
        memory_error = err
        log(WARN, "click journals write through the spool folder, not memory: ", err)
    end
    return journals.create(dir, prefix, per_entry, max_bytes, size)
end

-- Makes the worker's own journal: until one can be made, its clicks are
-- dropped (counted as dropped, and as served for the accounting), and
-- each tick of its timer tries again.
function _M.make_own()
    local journal, err = new_journal()
    if not journal then
        if err ~= own_error then
            own_error = err
            log(ERR, "clicks will be dropped until a click journal can be made: ", err)
        end
        _M.lost = _M.lost or hourcounts.counts(random_prefix())
        return false
    end
    _M.own, own_error = journal, nil
    log(NOTICE, "click journal ", journal.path)
    return true
end

-- Sets the metrics of `journal`: what it holds that Redis has not taken.
function _M.report(journal)
    local clicks, bytes = journal:waiting()
    metrics.set_part(DEPTH, journal.prefix, clicks)
    metrics.set_part(SPOOL_BYTES, journal.prefix, bytes)
    metrics.set_part(JOURNALS, journal.prefix, 1)
end

-- Drops the metrics of `journal`, sent in full or set aside.
function _M.forget(journal)
    metrics.drop_part(DEPTH, journal.prefix)
    metrics.drop_part(SPOOL_BYTES, journal.prefix)
    metrics.drop_part(JOURNALS, journal.prefix)
end

-- Sets the metrics of every journal the worker has.
function _M.report_all()
    if _M.own then
        _M.report(_M.own)
    end
    for _, journal in pairs(_M.adopted) do
        _M.report(journal)
    end
end

-- Lets go of `journal`, every entry and count of it sent: it becomes the
-- worker's spare if it has none (and it is not too large), else it is
-- removed.
function _M.retire(journal)
    _M.forget(journal)
    if not _M.spare and journal:length() <= SPARE_BYTES then
        local ok, err = journal:make_spare()
        if ok then
            _M.spare = journal
            return
        end
        log(ERR, err)
    end
    journal:remove()
end

-- Deletes the ring of the worker's spare, as the worker exits: the spare
-- is left to the worker that starts next.
function _M.drop_spare_ring()
    if _M.spare then
        journals.drop_spare_ring(_M.spare)
    end
end

-- Takes the spares of workers that have gone, one as the worker's own if
-- it has none; removes the others.
local function take_spares(dir, names)
    for _, name in pairs(names) do
        local spare, err = journals.open_spare(dir, name)
        if spare then
            if _M.spare then
                journals.remove_spare(spare)
            else
                _M.spare = spare
            end
        elseif err then
            log(ERR, err)
        end
    end
end

-- Takes over the journals whose workers have gone (their lock is free).
function _M.scan()
    local dir, adopted = config.click_spool_dir, _M.adopted
    local names, unfinished, spares = spooldir.list(dir)
    if not names then
        log(ERR, unfinished)
        return
    end
    for _, name in pairs(names) do
        if name ~= _M.own.name and not adopted[name] then
            local journal, err = journals.adopt(dir, name)
            if journal then
                local clicks = journal:waiting()
                adopted[name] = journal
                _M.report(journal)
                if journal.lost and journal.lost > 0 then
                    log(ERR, "the click journal ", name, " lost ", journal.lost,
                        " clicks with its ring, gone with the machine's memory before a sync")
                end
                if clicks > 0 then
                    log(WARN, "took over the click journal ", name, " of a worker that has gone: ",
                        clicks, " clicks to send")
                end
            elseif err then
                log(ERR, err)
            end
        end
    end
    spooldir.remove_unfinished(dir, unfinished)
    take_spares(dir, spares)
end

-- A journal past ROTATE_BYTES (or half its bound) whose clicks Redis has
-- nearly all taken makes way for a new one, and is sent and removed as a
-- journal taken over is: the spool does not grow without end, and a
-- journal holding an outage's clicks is left whole until they are sent.
function _M.rotate()
    local own = _M.own
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
    _M.adopted[own.name] = own  -- its ring goes with it, once all is sent
    _M.own = journal
end

-- The spool folder and the click memory folder, from nginx's master
-- (init phase): made if missing, and given to the workers' user.
function _M.prepare()
    local ok, err = spooldir.prepare_dir(config.click_spool_dir, WORKER_USER)
    if not ok then
        error(err, 0)
    end
    ok, err = spooldir.prepare_dir(config.click_memory_dir, WORKER_USER)
    if not ok then
        log(WARN, err, " (EDGE_CLICK_MEMORY_DIR)")
    end
end

return _M
