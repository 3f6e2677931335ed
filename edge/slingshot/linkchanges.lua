-- Following the dashboard's changes: every worker tails the stream
-- slingshot:link-changes (docs/contract.md, "Link changes") from a timer,
-- every EDGE_LINK_CHANGES_INTERVAL, and passes each entry on: a link's to
-- the cache (linkcache.lua), a domain's to domains.lua (read again) and
-- robots.lua (forgotten). The same tick reads the domains again when they
-- are due (domains.lua).
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local linkcache = require("slingshot.linkcache")
local linklookup = require("slingshot.linklookup")
local domains = require("slingshot.domains")
local robots = require("slingshot.robots")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local null = ngx.null
local now = ngx.now

local _M = { _VERSION = "0.3.0" }

local CHANGES = contract.LINK_CHANGES_STREAM
local DOMAINS = contract.DOMAINS_KEY
local CHANGES_BATCH = 1000

local CHANGES_ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "changes")

-- Where this worker is in the change stream; nil until it has asked, and
-- again after Redis failed it.
local last_change_id
local tailing = false

function _M.init_worker()
    domains.use({}, domains.fallback(config), false)
    local ok, err = ngx.timer.at(0, _M.follow)
    if ok then
        ok, err = ngx.timer.every(config.link_changes_interval, _M.follow)
    end
    if not ok then
        log(ERR, "link changes timer: ", err)
    end
end

-- Passes on the change entries after `last_change_id`. Returns how many
-- entries it read, or nil and an error.
local function read_changes(red)
    if not last_change_id then
        -- Start at the end of the stream: what came before it is in Redis
        -- already, and linkcache.found_changes forgets what may predate it.
        local newest, err = red:xrevrange(CHANGES, "+", "-", "COUNT", 1)
        if not newest then
            return nil, "redis xrevrange: " .. err
        end
        last_change_id = newest[1] and newest[1][1] or "0-0"
        domains.forget()
        robots.forget()
        linkcache.found_changes()
        return 0
    end
    local res, err = red:xread("COUNT", CHANGES_BATCH, "STREAMS", CHANGES, last_change_id)
    if not res then
        return nil, "redis xread: " .. err
    end
    if res == null then
        return 0
    end
    local entries = res[1][2]
    linkcache.changing()
    for i = 1, #entries do
        local entry = entries[i]
        local fields = entry[2]
        local slug, host
        for j = 1, #fields - 1, 2 do
            local name = fields[j]
            if name == "slug" then
                slug = fields[j + 1]
            elseif name == "domain" then
                host = fields[j + 1]
            end
        end
        if slug then
            linkcache.evict(host and host .. "/" .. slug or slug)
        elseif host then
            -- The domain's settings or its robots.txt changed.
            domains.forget()
            robots.forget(host)
        end
        last_change_id = entry[1]
    end
    return #entries
end

-- Reads the domains again with `red` when they are due. Returns whether
-- `red` can go back to the pool.
local function reload_domains(red)
    local ok, skipped = domains.refresh(red, DOMAINS, config, now())
    if ok == nil then
        -- Asked again after EDGE_CACHE_TTL or the next change of a domain;
        -- the links' cache and the change stream's position stay as they are.
        log(ERR, "domains: ", skipped)
        return false
    end
    for i = 1, #(skipped or {}) do
        log(ERR, skipped[i], "; answering its requests as the default domain's")
    end
    return true
end

-- Timer handler: passes on what the dashboard changed since the last tick.
function _M.follow(premature)
    linkcache.tick()
    if premature or tailing then
        return
    end
    tailing = true
    local count
    local red, err = redis.connect(config.redis_links)
    if red then
        repeat
            count, err = read_changes(red)
        until count ~= CHANGES_BATCH
        if count and reload_domains(red) then
            redis.release(red)
        else
            red:close()
        end
    end
    if not count then
        linklookup.doubt()
        metrics.inc(CHANGES_ERRORS)
        if last_change_id then
            -- Entries may be trimmed or lost while Redis is away: start over
            -- from the end of the stream when it is back, and ask again for
            -- every link cached (linkcache.found_changes).
            log(WARN, "link changes: ", err,
                "; every cached link is asked again when Redis answers")
            last_change_id = nil
            linkcache.lost_changes()
        end
    end
    tailing = false
end

return _M
