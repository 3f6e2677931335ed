-- Click recording: buffered per worker, appended to the Redis stream from a
-- timer, several clicks per stream entry (docs/contract.md). The request
-- only copies its click into the buffer (clickbuf.lua); it never waits for
-- Redis, nor reads the clock: nginx puts the time in the click's details.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clickbuf = require("slingshot.clickbuf")
local nginxvar = require("slingshot.nginxvar")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local accounting = require("slingshot.accounting")
local ffi = require("ffi")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local now = ngx.now
local sleep = ngx.sleep
local min = math.min
local io_open = io.open
local type = type
local tostring = tostring
local error = error
local ffi_string = ffi.string

local _M = { _VERSION = "0.4.0" }

local STREAM = contract.CLICKS_STREAM
local VERSION = contract.CLICK_RECORD_VERSION

local BUFFERED = metrics.CLICKS_BUFFERED
local ORPHANS = metrics.CLICKS_ORPHAN
local FLUSHED = metrics.CLICKS_FLUSHED
local DROPPED = metrics.CLICKS_DROPPED
local DEPTH = metrics.CLICK_BUFFER_DEPTH
local ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "clicks")
local REDIRECT, ORPHAN = accounting.REDIRECT, accounting.ORPHAN

local CHECK_ABOVE = clickbuf.CHECK_ABOVE
local cut_details = clickbuf.cut_details
-- The request's click details as nginx.conf joins them; empty for HEAD.
local details = nginxvar.reader("slingshot_click")

-- Clicks not yet turned into payloads (a clickbuf buffer; buffer.count of them).
local buffer
-- Payloads being written or waiting to be written again, and their clicks.
local unsent, unsent_clicks = {}, 0
local reported_depth = 0
local flushing = false
local failures, retry_at = 0, 0
local exited = false
local warned_unset = false

local function random_prefix()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        error("click ids: cannot read /dev/urandom: " .. err)
    end
    local bytes = f:read(8)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

-- Copies a click, whose details are `len` bytes at `at`, into the buffer.
local function buffer_click(slug, link_id, rule, at, len)
    accounting.count(link_id == "" and ORPHAN or REDIRECT, now())
    if buffer.count + unsent_clicks >= config.click_buffer_max then
        metrics.inc(DROPPED)
        return
    end
    if len > CHECK_ABOVE then
        at = cut_details(ffi_string(at, len))
        len = #at
    end
    buffer:add(slug, link_id, rule or "", at, len)
    metrics.inc(BUFFERED)
    if link_id == "" then
        metrics.inc(ORPHANS)
    end
    if exited then
        -- The exit flush has run and no timer runs after it: requests still
        -- finishing in an old worker write their own clicks, and counts.
        _M.flush(true)
        accounting.flush()
        metrics.sync()
    end
end

-- Buffers the current request's click on `slug`, served by the link whose
-- id is `link_id` (a string of digits) through `rule` (rules.pick's label,
-- or nil for the link's own url), or an orphan visit (a slug without a
-- link, or whose link is not served) when `link_id` is "", and then `rule`
-- is the visit's kind and domain (domains.orphan_labels). A HEAD request,
-- whose details nginx leaves empty, is no click. Only copies into the
-- buffer; the flush makes the payloads.
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
    return buffer_click(slug, link_id, rule, at, len)
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
    return buffer_click(slug, link_id, rule, changed, #changed)
end

local function write(payloads)
    local red, err = redis.connect(config.redis_clicks)
    if not red then
        return nil, err
    end
    red:init_pipeline(#payloads)
    for i = 1, #payloads do
        red:xadd(STREAM, "*", "v", VERSION, "clicks", payloads[i])
    end
    local results
    results, err = red:commit_pipeline()
    if not results then
        red:close()
        return nil, "redis xadd: " .. err
    end
    for i = 1, #results do
        local res = results[i]
        if type(res) == "table" and res[1] == false then
            red:close()
            return nil, "redis xadd: " .. tostring(res[2])
        end
    end
    redis.release(red)
    return true
end

local function report_depth()
    local waiting = buffer.count + unsent_clicks
    if waiting ~= reported_depth then
        metrics.inc(DEPTH, waiting - reported_depth)
        reported_depth = waiting
    end
end

-- Timer handler, also run once more when the worker exits (premature).
-- Payloads that fail are kept as they are (the same click ids) and written
-- again with exponential backoff up to EDGE_CLICK_RETRY_MAX seconds; if
-- part of them had reached the stream, the importer drops the repeats by
-- click id. Meanwhile clicks keep buffering up to EDGE_CLICK_BUFFER_MAX.
function _M.flush(premature)
    if premature then
        exited = true
        while flushing do
            sleep(0.01)  -- the exit flush must not skip what the running one left
        end
    end
    if flushing or buffer.count + unsent_clicks == 0 or (not premature and now() < retry_at) then
        return report_depth()
    end
    flushing = true
    local _, taken = buffer:take(unsent)
    unsent_clicks = unsent_clicks + taken
    local ok, err = write(unsent)
    local count = unsent_clicks
    if ok then
        metrics.inc(FLUSHED, count)
        unsent, unsent_clicks = {}, 0
        failures, retry_at = 0, 0
    elseif premature then
        log(ERR, "click flush at exit failed, ", count, " clicks lost: ", err)
        metrics.inc(ERRORS)
        metrics.inc(DROPPED, count)
        unsent, unsent_clicks = {}, 0
    else
        failures = failures + 1
        local delay = min(config.click_retry_max, config.click_flush_interval * 2 ^ failures)
        retry_at = now() + delay
        log(WARN, "click flush of ", count, " clicks failed (retry in ", delay, " s): ", err)
        metrics.inc(ERRORS)
    end
    flushing = false
    return report_depth()
end

function _M.init_worker()
    buffer = clickbuf.new(random_prefix(), config.clicks_per_entry)
end

return _M
