-- Visit limits (max_visits): a Redis counter per limited link, shared by
-- every worker of every edge, so that the limit is exact however the
-- requests are spread. Only links with a limit pay the round trip.
--
-- While no primary answers (killed, hung, or Sentinel still promoting a
-- replica), a limited link is not failed: the edge reads the counter from
-- the Redis it reads links from (its replica) and counts the visits it lets
-- through in a shared dict, which the flush timer adds to the primary once
-- one answers. Should its replica not answer either (held up while it
-- follows a new primary), the worker counts on from the counter as it last
-- read it. The limit then holds to within the visits other edges let
-- through in the same seconds (docs/operations.md, "What a fault costs").
-- A count not sent within EDGE_STALE_TTL of its first visit is dropped.
local config = require("slingshot.config")
local metrics = require("slingshot.metrics")
local redis = require("slingshot.redis")

local log = ngx.log
local shared = ngx.shared
local tonumber = tonumber
local WARN = ngx.WARN

local _M = { _VERSION = "0.2.0" }

_M.DICT = "slingshot_visits"
-- Held by the one worker sending the counted visits; it ends by itself
-- should that worker die while sending.
local SENDING = "\0sending"
local SENDING_TTL = 5

local function counted()
    local dict = shared[_M.DICT]
    if not dict then
        error("lua_shared_dict " .. _M.DICT .. " is missing from nginx.conf")
    end
    return dict
end

function _M.init()
    counted()
end

-- The counter as the edge's replica has it, or nil and why not.
local function replica_count(key)
    local red, err = redis.connect(config.redis_links)
    if not red then
        return nil, err
    end
    local n
    n, err = red:get(key)
    if not n then
        red:close()
        return nil, "redis visits: " .. err
    end
    redis.release(red)
    return tonumber(n) or 0
end

-- The counter as the edge's replica has it (or, should the replica not
-- answer, as this worker last read it), plus the visits this edge counted
-- while no primary answered.
local function admit_without_primary(link, counting, primary_err)
    if #config.redis_sentinels == 0 and config.redis_links.pool == config.redis_primary.pool then
        return nil, primary_err  -- no replica of its own to read
    end
    local n, err = replica_count(link.visits_key)
    if n then
        link.visits_read = n
    elseif link.visits_read then
        n = link.visits_read
        metrics.inc(metrics.VISITS_FROM_LAST_READ)
        log(WARN, "visits of link ", link.id, ": ", primary_err, "; ", err,
            "; counted from the last read")
    else
        return nil, primary_err .. "; " .. err
    end
    local dict = counted()
    local here
    if counting then
        here, err = dict:incr(link.visits_key, 1, 0, config.stale_ttl)
        if not here then
            return nil, primary_err .. "; visits counted here: " .. err
        end
        metrics.inc(metrics.VISITS_COUNTED_HERE)
    else
        here = (dict:get(link.visits_key) or 0) + 1
    end
    return n + here <= link.max_visits
end

-- Whether a request may be redirected by `link` (decoded by linkvalue.lua,
-- limited: it has a visits_key): a visit that counts (`counting`, every
-- method but HEAD) takes the next number, and is let through while that
-- number is within the limit; one that does not count only looks. Returns
-- true or false, or nil and an error when neither the primary nor the
-- replica could be asked.
function _M.admit(link, counting)
    local red, err = redis.connect()
    if not red then
        return admit_without_primary(link, counting, err)
    end
    local n
    if counting then
        n, err = red:incr(link.visits_key)
    else
        n, err = red:get(link.visits_key)
    end
    if not n then
        red:close()
        return admit_without_primary(link, counting, "redis visits: " .. err)
    end
    redis.release(red)
    n = tonumber(n) or 0
    link.visits_read = n
    if not counting then
        n = n + 1  -- the number the visit would take
    end
    return n <= link.max_visits
end

-- Adds the visits counted while no primary answered to the primary's
-- counters (in a timer; one worker at a time). A count is taken out of the
-- dict before it is sent and put back if sending fails, so a visit counted
-- meanwhile is neither lost nor sent twice.
function _M.flush()
    local dict = counted()
    local keys, waiting = dict:get_keys(0), {}
    for i = 1, #keys do
        local n = keys[i] ~= SENDING and dict:get(keys[i])
        if n and n > 0 then
            waiting[#waiting + 1] = keys[i]
        end
    end
    if #waiting == 0 or not dict:add(SENDING, true, SENDING_TTL) then
        return true
    end
    local red, err = redis.connect()
    if not red then
        dict:delete(SENDING)
        return nil, err
    end
    for i = 1, #waiting do
        local key = waiting[i]
        local n = dict:get(key)
        if n and n > 0 then
            dict:incr(key, -n)
            local _, incr_err = red:incrby(key, n)
            if incr_err then
                dict:incr(key, n, 0, config.stale_ttl)
                red:close()
                dict:delete(SENDING)
                return nil, "redis visits: " .. incr_err
            end
        end
    end
    redis.release(red)
    dict:delete(SENDING)
    return true
end

return _M
