-- Short-lived Redis clients for request handlers and timers.
--
-- A client lives inside one function call and goes back to the per-worker
-- connection pool with set_keepalive; nothing here keeps a socket in module
-- state (cosockets cannot cross requests).
local compat = require("slingshot.compat")
local config = require("slingshot.config")

local redis = compat.redis

local _M = { _VERSION = "0.1.0" }

local POOL_IDLE_MS = 60000

-- `server` is one of config.redis_links, redis_clicks or redis_primary (the default).
function _M.connect(server)
    server = server or config.redis_primary
    local red, err = redis:new()
    if not red then
        return nil, "redis new: " .. err
    end
    red:set_timeout(config.redis_connect_timeout_ms)
    local ok
    ok, err = red:connect(server.host, server.port, { pool = server.pool })
    if not ok then
        return nil, "redis connect: " .. err
    end
    red:set_timeout(config.redis_read_timeout_ms)
    if red:get_reused_times() == 0 then
        if server.password then
            ok, err = red:auth(server.password)
            if not ok then
                red:close()
                return nil, "redis auth: " .. err
            end
        end
        if server.db ~= 0 then
            ok, err = red:select(server.db)
            if not ok then
                red:close()
                return nil, "redis select: " .. err
            end
        end
    end
    return red
end

-- Hand a healthy client back to the pool. After an error call :close() instead.
function _M.release(red)
    local ok, err = red:set_keepalive(POOL_IDLE_MS, config.redis_pool_size)
    if not ok then
        red:close()
        return nil, "redis keepalive: " .. err
    end
    return true
end

return _M
