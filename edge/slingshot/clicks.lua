-- Click recording: buffered per worker, appended to the Redis stream from a
-- timer, several clicks per stream entry (docs/contract.md). The request
-- only appends to a Lua table; it never waits for Redis.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clickbuf = require("slingshot.clickbuf")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local now = ngx.now
local var = ngx.var
local floor = math.floor
local sub = string.sub
local io_open = io.open
local type = type
local tostring = tostring
local error = error

local _M = { _VERSION = "0.1.0" }

_M.STREAM = "slingshot:clicks"
local UA_MAX = 512
local REFERER_MAX = 1024

local buffer, depth = {}, 0
local prefix
local seq = 0
local flushing = false

_M.stats = { buffered = 0, flushed = 0, dropped = 0 }

local function random_prefix()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        error("click ids: cannot read /dev/urandom: " .. err)
    end
    local bytes = f:read(8)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

function _M.record(slug)
    if depth >= config.click_buffer_max then
        _M.stats.dropped = _M.stats.dropped + 1
        return
    end
    seq = seq + 1
    depth = depth + 1
    buffer[depth] = {
        id = clickbuf.click_id(prefix, seq),
        ts = floor(now() * 1000),
        slug = slug,
        ip = var.remote_addr,
        ua = sub(var.http_user_agent or "", 1, UA_MAX),
        ref = sub(var.http_referer or "", 1, REFERER_MAX),
    }
    _M.stats.buffered = _M.stats.buffered + 1
end

-- Put a batch that could not be written back in front of what arrived since,
-- keeping at most EDGE_CLICK_BUFFER_MAX clicks.
local function requeue(batch, count)
    local merged, n = {}, 0
    local limit = config.click_buffer_max
    for i = 1, count do
        if n >= limit then break end
        n = n + 1
        merged[n] = batch[i]
    end
    for i = 1, depth do
        if n >= limit then
            _M.stats.dropped = _M.stats.dropped + (depth - i + 1)
            break
        end
        n = n + 1
        merged[n] = buffer[i]
    end
    if count > limit then
        _M.stats.dropped = _M.stats.dropped + (count - limit)
    end
    buffer, depth = merged, n
end

local function write(batch, count)
    local payloads = clickbuf.payloads(batch, count, config.clicks_per_entry)
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

-- Timer handler. A batch that fails is requeued whole; if part of it had
-- reached the stream, the importer drops the repeats by click id.
function _M.flush(premature)
    if flushing or depth == 0 then
        return
    end
    flushing = true
    local batch, count = buffer, depth
    buffer, depth = {}, 0
    local ok, err = write(batch, count)
    if ok then
        _M.stats.flushed = _M.stats.flushed + count
    else
        log(premature and ERR or WARN, "click flush of ", count, " clicks failed: ", err)
        requeue(batch, count)
    end
    flushing = false
end

function _M.depth()
    return depth
end

function _M.init_worker()
    prefix = random_prefix()
    local ok, err = ngx.timer.every(config.click_flush_interval, _M.flush)
    if not ok then
        log(ERR, "click flush timer: ", err)
    end
end

return _M
