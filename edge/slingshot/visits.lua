-- Visit limits (max_visits): a Redis counter per limited link, shared by
-- every worker of every edge, so that the limit is exact however the
-- requests are spread. Only links with a limit pay the round trip.
local redis = require("slingshot.redis")

local tonumber = tonumber

local _M = { _VERSION = "0.1.0" }

-- Whether a request may be redirected by `link` (decoded by linkvalue.lua, with
-- a max_visits): a visit that counts (`counting`, every method but HEAD)
-- takes the next number, and is let through while that number is within
-- the limit; one that does not count only looks. Returns true or false,
-- or nil and an error when Redis could not be asked.
function _M.admit(link, counting)
    local red, err = redis.connect()
    if not red then
        return nil, err
    end
    local n
    if counting then
        n, err = red:incr(link.visits_key)
    else
        n, err = red:get(link.visits_key)
        if n then
            n = (tonumber(n) or 0) + 1
        end
    end
    if not n then
        red:close()
        return nil, "redis visits: " .. err
    end
    redis.release(red)
    return n <= link.max_visits
end

return _M
