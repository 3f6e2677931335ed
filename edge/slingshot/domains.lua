-- Domains (docs/contract.md, "Domains"): which domain a request is for,
-- and that domain's own redirects and robots.txt.
--
-- Every worker keeps every domain, read from the hash slingshot:domains
-- when it starts, when a change notification names a domain, and every
-- EDGE_CACHE_TTL in case one was missed (refresh, from linkchanges.lua).
-- Until the hash has more than the default domain (`multi`), a request
-- costs nothing more than before: its Host is not even read. A host the
-- edge does not know is the default domain's, whose redirects are
-- EDGE_ROOT_URL and EDGE_NOT_FOUND_URL unless its entry sets its own.
local cjson = require("cjson.safe")
local link = require("slingshot.linkvalue")
local contract = require("slingshot.contract")

local type = type
local pairs = pairs
local ipairs = ipairs
local next = next
local find = string.find

local _M = { _VERSION = "0.2.0" }

-- A domain table: host (nil for the default domain before the hash is
-- read), default, root_url, not_found_url, expired_url, https_redirect,
-- `prefix`: what a slug's cache and Redis key start with ("host/"; nil on
-- the default domain, whose keys are the slugs alone), and `orphan`: the
-- third line of its orphan visits' records by kind (orphan_labels).

-- The longest host: DNS names are at most 253 characters.
_M.HOST_MAX = 253

-- What an orphan visit of each kind on the domain of `host` (nil for the
-- default domain) records on its third line (docs/contract.md, record
-- format 5): the kind, then a space and the host unless the domain is the
-- default one. Made once per domain, so that a request joins no strings.
function _M.orphan_labels(host)
    local labels = {}
    for _, kind in ipairs(contract.ORPHAN_KINDS) do
        labels[kind] = host and kind .. " " .. host or kind
    end
    return labels
end

local function optional_url(value)
    if type(value) == "string" and link.safe_url(value) then
        return value
    end
    return nil
end

-- The domain of `host` from its JSON entry, or nil and a reason.
function _M.decode(host, raw)
    local value = cjson.decode(raw)
    if type(value) ~= "table" then
        return nil, "domain " .. host .. ": not a JSON object"
    end
    local default = value.default == true
    -- Its host goes into the click records of its orphan visits, a line each.
    if not default and (#host > _M.HOST_MAX or find(host, "[%s%c]")) then
        return nil, "domain " .. host .. ": not a host name"
    end
    return {
        host = host,
        default = default,
        root_url = optional_url(value.root_url),
        not_found_url = optional_url(value.not_found_url),
        expired_url = optional_url(value.expired_url),
        https_redirect = value.https_redirect == true,
        prefix = not default and host .. "/" or nil,
        orphan = _M.orphan_labels(not default and host or nil),
    }
end

-- The default domain before anything is read: EDGE_ROOT_URL and
-- EDGE_NOT_FOUND_URL from `settings` (config.lua).
function _M.fallback(settings)
    return { default = true, root_url = settings.root_url, not_found_url = settings.not_found_url,
        https_redirect = false, orphan = _M.orphan_labels(nil) }
end

-- From HGETALL's flat reply {host, json, host, json, ...}: the domains by
-- host, the default domain, whether there is any other, and the reasons
-- entries were skipped. Pure, for busted.
function _M.build(flat, settings)
    local by_host, default, errors = {}, nil, {}
    for i = 1, #flat - 1, 2 do
        local domain, err = _M.decode(flat[i], flat[i + 1])
        if domain then
            by_host[domain.host] = domain
            if domain.default then
                default = domain
            end
        else
            errors[#errors + 1] = err
        end
    end
    if default then
        default.root_url = default.root_url or settings.root_url
        default.not_found_url = default.not_found_url or settings.not_found_url
    else
        default = _M.fallback(settings)
    end
    local multi = false
    for _, domain in pairs(by_host) do
        if not domain.default then
            multi = true
            break
        end
    end
    return by_host, default, multi, errors
end

-- The state every request reads (edge.lua): set by use().
_M.multi = false
_M.default = nil
local by_host = {}

function _M.use(hosts, default, multi)
    by_host, _M.default, _M.multi = hosts, default, multi
end

-- The domain of a request's Host (as nginx's $host has it: lower case, no
-- port, no trailing dot); the default domain for a host the edge does not know.
function _M.for_host(host)
    return by_host[host] or _M.default
end

-- Reads every domain with `red` (a Redis client) from `key` and uses them.
-- Returns true and the reasons entries were skipped, or nil and an error.
function _M.load(red, key, settings)
    local flat, err = red:hgetall(key)
    if not flat then
        return nil, "redis hgetall: " .. err
    end
    local hosts, default, multi, errors = _M.build(flat, settings)
    _M.use(hosts, default, multi)
    return true, errors
end

-- When the domains were last read (or last failed to be); nil: read them
-- at the next chance (linkchanges.lua calls refresh every tick).
local read_at

function _M.forget()
    read_at = nil
end

-- Reads the domains again with `red` from `key` when they were forgotten
-- or read longer ago than settings.cache_ttl, at Unix time `now`. Returns
-- true (and, when it read them, the reasons entries were skipped), or nil
-- and an error: they are then asked again after settings.cache_ttl, or
-- once forgotten.
function _M.refresh(red, key, settings, now)
    if read_at and now - read_at <= settings.cache_ttl then
        return true
    end
    read_at = now
    return _M.load(red, key, settings)
end

function _M.count()
    local n, host = 0, next(by_host)
    while host do
        n = n + 1
        host = next(by_host, host)
    end
    return n
end

return _M
