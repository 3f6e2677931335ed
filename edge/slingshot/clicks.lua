-- Click recording: buffered per worker, appended to the Redis stream from a
-- timer, several clicks per stream entry (docs/contract.md). The request
-- only appends to a Lua table; it never waits for Redis.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clickbuf = require("slingshot.clickbuf")
local metrics = require("slingshot.metrics")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local now = ngx.now
local sleep = ngx.sleep
local min = math.min
local floor = math.floor
local io_open = io.open
local type = type
local tostring = tostring
local error = error

local _M = { _VERSION = "0.2.0" }

_M.STREAM = "slingshot:clicks"
local FIELDS = clickbuf.FIELDS

local BUFFERED = "slingshot_edge_clicks_buffered_total"
local ORPHANS = "slingshot_edge_clicks_orphan_total"
local FLUSHED = "slingshot_edge_clicks_flushed_total"
local DROPPED = "slingshot_edge_clicks_dropped_total"
local DEPTH = "slingshot_edge_click_buffer_depth"
local ERRORS = 'slingshot_edge_redis_errors_total{op="clicks"}'

local buffer, depth = {}, 0
local reported_depth = 0
local prefix
local seq = 0
local flushing = false
local failures, retry_at = 0, 0
local exited = false

local function random_prefix()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        error("click ids: cannot read /dev/urandom: " .. err)
    end
    local bytes = f:read(8)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

-- Buffers a click on `slug`: `details` is the request's $slingshot_click
-- (nginx.conf), `orphan` marks a visit to a slug without a link. Only
-- appends to the buffer; the click object is built when it is flushed.
function _M.record(slug, details, orphan)
    if depth >= config.click_buffer_max then
        metrics.inc(DROPPED)
        return
    end
    seq = seq + 1
    local at = depth * FIELDS
    buffer[at + 1] = seq
    buffer[at + 2] = slug
    buffer[at + 3] = floor(now() * 1000)
    buffer[at + 4] = details
    buffer[at + 5] = orphan
    depth = depth + 1
    metrics.inc(BUFFERED)
    if orphan then
        metrics.inc(ORPHANS)
    end
    if exited then
        -- The exit flush has run and no timer runs after it: requests still
        -- finishing in an old worker write their own clicks, and counts.
        _M.flush(true)
        metrics.sync()
    end
end

-- Put a batch that could not be written back in front of what arrived since,
-- keeping at most EDGE_CLICK_BUFFER_MAX clicks.
local function requeue(batch, count)
    local limit = config.click_buffer_max
    local kept = count < limit and count or limit
    local arrived = depth < limit - kept and depth or limit - kept
    local merged = {}
    for i = 1, kept * FIELDS do
        merged[i] = batch[i]
    end
    local offset = kept * FIELDS
    for i = 1, arrived * FIELDS do
        merged[offset + i] = buffer[i]
    end
    if count + depth > kept + arrived then
        metrics.inc(DROPPED, count + depth - kept - arrived)
    end
    buffer, depth = merged, kept + arrived
end

local function write(batch, count)
    local payloads = clickbuf.payloads(prefix, batch, count, config.clicks_per_entry)
    local red, err = redis.connect()
    if not red then
        return nil, err
    end
    red:init_pipeline(#payloads)
    for i = 1, #payloads do
        red:xadd(_M.STREAM, "*", "v", "1", "clicks", payloads[i])
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
    if depth ~= reported_depth then
        metrics.inc(DEPTH, depth - reported_depth)
        reported_depth = depth
    end
end

-- Timer handler, also run once more when the worker exits (premature). A
-- batch that fails is requeued whole and retried with exponential backoff up
-- to EDGE_CLICK_RETRY_MAX seconds; if part of it had reached the stream, the
-- importer drops the repeats by click id.
function _M.flush(premature)
    if premature then
        exited = true
        while flushing do
            sleep(0.01)  -- the exit flush must not skip what the running one left
        end
    end
    if flushing or depth == 0 or (not premature and now() < retry_at) then
        return report_depth()
    end
    flushing = true
    local batch, count = buffer, depth
    buffer, depth = {}, 0
    local ok, err = write(batch, count)
    if ok then
        metrics.inc(FLUSHED, count)
        failures, retry_at = 0, 0
    elseif premature then
        log(ERR, "click flush at exit failed, ", count, " clicks lost: ", err)
        metrics.inc(ERRORS)
        metrics.inc(DROPPED, count)
    else
        failures = failures + 1
        local delay = min(config.click_retry_max, config.click_flush_interval * 2 ^ failures)
        retry_at = now() + delay
        log(WARN, "click flush of ", count, " clicks failed (retry in ", delay, " s): ", err)
        metrics.inc(ERRORS)
        requeue(batch, count)
    end
    flushing = false
    return report_depth()
end

function _M.init_worker()
    prefix = random_prefix()
end

return _M
