-- Every click accounted for: per UTC hour, the redirects and orphan visits
-- this worker recorded as clicks, added to a Redis hash per hour
-- (contract.SERVED_KEY_PREFIX .. hour start in Unix seconds; fields
-- `redirect` and `orphan`) that the dashboard sets beside the clicks stored
-- for that hour (docs/operations.md, "Every click accounted for").
--
-- A request only adds 1 to a Lua table (count); the worker's timer sends
-- the sums (flush), one HINCRBY per hour and kind, and keeps them to send
-- again when Redis is away.
local contract = require("slingshot.contract")

local pairs = pairs
local floor = math.floor
local require = require

local _M = { _VERSION = "0.1.0" }

_M.HOUR = 3600
-- How long an hour's hash stays in Redis: long enough to compare a week.
_M.TTL = 8 * 24 * 3600
_M.REDIRECT = "redirect"
_M.ORPHAN = "orphan"

-- hour start -> { redirect = n, orphan = n }, not sent yet.
local pending = {}
local pending_hours = 0

function _M.key(hour)
    return contract.SERVED_KEY_PREFIX .. hour
end

-- Adds one click of `kind` made at `at` (Unix seconds) to `tally`; returns
-- whether its hour is new in it.
function _M.add(tally, kind, at)
    local hour = floor(at / _M.HOUR) * _M.HOUR
    local counts = tally[hour]
    if counts then
        counts[kind] = counts[kind] + 1
        return false
    end
    tally[hour] = { redirect = 0, orphan = 0 }
    tally[hour][kind] = 1
    return true
end

-- The commands that send `tally`: { key, field, n } for each count above 0.
function _M.commands(tally)
    local out = {}
    for hour, counts in pairs(tally) do
        for field, n in pairs(counts) do
            if n > 0 then
                out[#out + 1] = { _M.key(hour), field, n }
            end
        end
    end
    return out
end

-- In the request path: a table update, no I/O.
function _M.count(kind, at)
    if _M.add(pending, kind, at) then
        pending_hours = pending_hours + 1
    end
end

-- From the worker's timer (edge.lua tick), and once more at exit.
function _M.flush()
    if pending_hours == 0 then
        return true
    end
    local commands = _M.commands(pending)
    local redis = require("slingshot.redis")
    -- Beside this edge's clicks: the counts are as available as the clicks are.
    local red, err = redis.connect(require("slingshot.config").redis_clicks)
    if not red then
        return nil, "accounting: " .. err
    end
    red:init_pipeline(#commands * 2)
    for i = 1, #commands do
        local command = commands[i]
        red:hincrby(command[1], command[2], command[3])
        red:expire(command[1], _M.TTL)
    end
    local results
    results, err = red:commit_pipeline()
    if not results then
        red:close()
        return nil, "accounting: redis: " .. err
    end
    redis.release(red)
    -- Counted while the pipeline ran: taken off what was sent, kept for later.
    for i = 1, #commands do
        local command = commands[i]
        local hour = command[1]:sub(#contract.SERVED_KEY_PREFIX + 1) + 0
        local counts = pending[hour]
        counts[command[2]] = counts[command[2]] - command[3]
    end
    for hour, counts in pairs(pending) do
        if counts.redirect == 0 and counts.orphan == 0 then
            pending[hour] = nil
            pending_hours = pending_hours - 1
        end
    end
    return true
end

return _M
