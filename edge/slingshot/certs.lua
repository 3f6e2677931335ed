-- TLS for every domain: the certificate of a handshake's server name, read
-- from `<EDGE_CERT_DIR>/<host>.crt` and `.key` (PEM; the .crt may hold the
-- chain), kept parsed per worker for EDGE_CERT_TTL seconds so that a
-- certificate put in place (or renewed) is served within that time without
-- a restart. A name without files of its own gets `default.crt`/`.key` from
-- the same folder; a handshake without a name, or when even those are
-- missing, gets nginx.conf's `ssl_certificate`, which nginx needs to start.
local lrucache = require("resty.lrucache")
local servername = require("slingshot.servername")

local ngx = ngx
local io_open = io.open
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN

local _M = { _VERSION = "0.1.0" }

-- Server names with a certificate cached: enough for every domain.
local CACHE_SIZE = 10000
local DEFAULT = servername.DEFAULT

local function read(path)
    local file = io_open(path, "rb")
    if not file then
        return nil
    end
    local data = file:read("*a")
    file:close()
    return data
end

-- The parsed certificate chain and key of `name`, false when it has no
-- files, or nil and an error when they do not parse. `ssl` is ngx.ssl.
local function load(ssl, dir, name)
    local pem_cert = read(dir .. "/" .. name .. ".crt")
    if not pem_cert then
        return false
    end
    local pem_key = read(dir .. "/" .. name .. ".key")
    if not pem_key then
        return nil, name .. ".crt has no " .. name .. ".key"
    end
    local cert, err = ssl.parse_pem_cert(pem_cert)
    if not cert then
        return nil, name .. ".crt: " .. err
    end
    local key
    key, err = ssl.parse_pem_priv_key(pem_key)
    if not key then
        return nil, name .. ".key: " .. err
    end
    return { cert, key }
end

local cache

-- The pair for `name`, from the cache or the files; false when it has none.
-- A pair that does not parse is logged and counts as none, for the TTL.
local function pair(ssl, dir, ttl, name)
    local value = cache:get(name)
    if value == nil then
        local err
        value, err = load(ssl, dir, name)
        if value == nil then
            log(ERR, "certificate ", dir, "/", err)
            value = false
        end
        cache:set(name, value, ttl)
    end
    return value
end

-- ssl_certificate_by_lua: `settings` is config.lua's.
function _M.serve(settings)
    local ssl = require("ngx.ssl")
    if not cache then
        cache = lrucache.new(CACHE_SIZE)
    end
    local name = servername.file_name(ssl.server_name())
    if not name then
        return
    end
    local dir, ttl = settings.cert_dir, settings.cert_ttl
    local chosen = pair(ssl, dir, ttl, name) or pair(ssl, dir, ttl, DEFAULT)
    if not chosen then
        return  -- nginx.conf's ssl_certificate
    end
    local ok, err = ssl.clear_certs()
    if ok then
        ok, err = ssl.set_cert(chosen[1])
    end
    if ok then
        ok, err = ssl.set_priv_key(chosen[2])
    end
    if not ok then
        log(WARN, "certificate of ", name, ": ", err)
        return ngx.exit(ngx.ERROR)
    end
end

return _M
