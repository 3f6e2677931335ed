-- Short-lived Redis clients for request handlers and timers.
--
-- A client lives inside one function call and goes back to the per-worker
-- connection pool with set_keepalive; nothing here keeps a socket in module
-- state (cosockets cannot cross requests).
local compat = require("slingshot.compat")
local config = require("slingshot.config")

local redis = compat.redis

local ipairs = ipairs
local tonumber = tonumber
local tostring = tostring
local type = type

local _M = { _VERSION = "0.2.0" }

local POOL_IDLE_MS = 60000

-- The primary, as REDIS_HOST and REDIS_PORT say, or with REDIS_SENTINELS as
-- the first Sentinel that answers names it: asked again PRIMARY_TTL seconds
-- later, or at once after the primary refused a connection, so that a
-- failover reaches this worker within about a second.
local PRIMARY_TTL = 1
local primary, primary_until = nil, 0

local function ask_sentinels()
    local last_err = "no Sentinel answered"
    for _, sentinel in ipairs(config.redis_sentinels) do
        local red = redis:new()
        red:set_timeout(config.redis_connect_timeout_ms)
        local ok, err = red:connect(sentinel.host, sentinel.port)
        if ok and config.redis_sentinel_password then
            ok, err = red:auth(config.redis_sentinel_password)
        end
        local reply
        if ok then
            red:set_timeout(config.redis_read_timeout_ms)
            reply, err = red:sentinel("get-master-addr-by-name", config.redis_sentinel_master)
        end
        if type(reply) == "table" and reply[1] and reply[2] then
            red:set_keepalive(POOL_IDLE_MS, 4)
            local found = config.redis_primary
            local host, port = reply[1], tonumber(reply[2])
            return {
                host = host, port = port, password = found.password, db = found.db,
                pool = host .. ":" .. port .. ":" .. found.db,
            }
        end
        red:close()
        last_err = "sentinel " .. sentinel.host .. ":" .. sentinel.port .. ": "
            .. tostring(err or "no primary named " .. config.redis_sentinel_master)
    end
    return nil, last_err
end

local function primary_server()
    if #config.redis_sentinels == 0 then
        return config.redis_primary
    end
    local now = ngx.now()
    if primary and now < primary_until then
        return primary
    end
    local found, err = ask_sentinels()
    if not found then
        return nil, err
    end
    primary, primary_until = found, now + PRIMARY_TTL
    return primary
end

-- `server` is one of config.redis_links, redis_clicks, or nil for the primary.
function _M.connect(server)
    local err
    if not server then
        server, err = primary_server()
        if not server then
            return nil, "redis primary: " .. err
        end
    end
    local red
    red, err = redis:new()
    if not red then
        return nil, "redis new: " .. err
    end
    red:set_timeout(config.redis_connect_timeout_ms)
    local ok
    ok, err = red:connect(server.host, server.port, { pool = server.pool })
    if not ok then
        if server == primary then
            primary_until = 0
        end
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
