-- Following the dashboard's changes: every worker tails the stream
-- slingshot:link-changes (docs/contract.md, "Link changes") with a blocking
-- read, so an entry reaches it as soon as Redis has it, and passes each one
-- on: a link's to the cache (linkcache.lua), a domain's to domains.lua
-- (read again) and domainfiles.lua (forgotten). The same loop reads the domains
-- again when they are due (domains.lua). Beside it, a timer ticks the cache
-- every EDGE_LINK_CHANGES_INTERVAL, and starts the tail again if it ever
-- stopped.
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local metrics = require("slingshot.metrics")
local contract = require("slingshot.contract")
local linkcache = require("slingshot.linkcache")
local linklookup = require("slingshot.linklookup")
local domains = require("slingshot.domains")
local domainfiles = require("slingshot.domainfiles")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local WARN = ngx.WARN
local null = ngx.null
local now = ngx.now
local sleep = ngx.sleep
local exiting = ngx.worker.exiting
local pcall = pcall
local floor = math.floor

local _M = { _VERSION = "0.4.0" }

local CHANGES = contract.LINK_CHANGES_STREAM
local DOMAINS = contract.DOMAINS_KEY
local CHANGES_BATCH = 1000

local CHANGES_ERRORS = metrics.labelled(metrics.REDIS_ERRORS, "op", "changes")

-- Where this worker is in the change stream; nil until it has asked, and
-- again after Redis failed it.
local last_change_id
local tailing = false

-- How long one blocking read waits for an entry (ms): a worker that is
-- stopping finishes its read first, so it stops within this.
local block_ms

-- Passes on the change entries after `last_change_id`, waiting up to
-- block_ms for the first. Returns how many entries it read, or nil and an
-- error.
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
        domainfiles.forget()
        linkcache.found_changes()
        return 0
    end
    local res, err = red:xread("COUNT", CHANGES_BATCH, "BLOCK", block_ms,
        "STREAMS", CHANGES, last_change_id)
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
            -- The domain's settings, its robots.txt or its app-link files changed.
            domains.forget()
            domainfiles.forget(host)
        end
        last_change_id = entry[1]
    end
    return #entries
end

-- Reads the domains again with `red` when they are due (a failure is
-- logged, and asked again after EDGE_CACHE_TTL). Returns whether `red` can
-- go back to the pool.
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

-- Redis failed the tail: unknown slugs are doubted a while, and what is
-- cached is asked again once the stream is found again.
local function lost(err)
    linklookup.doubt()
    metrics.inc(CHANGES_ERRORS)
    if last_change_id then
        -- Entries may be trimmed or lost while Redis is away: start over
        -- from the end of the stream when it is back, and ask again for
        -- every link cached (linkcache.found_changes).
        log(WARN, "link changes: ", err, "; every cached link is asked again when Redis answers")
        last_change_id = nil
        linkcache.lost_changes()
    end
end

-- One read of the tail, on a connection from the pool (asked of the
-- Sentinels' current primary where there are some): returns nil, or an
-- error.
local function tail_once()
    local red, err = redis.connect(config.redis_links)
    if not red then
        return err
    end
    -- A blocking read answers within block_ms, and then as any read.
    red:set_timeout(block_ms + config.redis_read_timeout_ms)
    local count
    count, err = read_changes(red)
    if not count then
        red:close()
        return err
    end
    linkcache.heard()
    if reload_domains(red) then
        redis.release(red)
    else
        red:close()
    end
end

-- Timer handler: the tail, for as long as the worker runs. After a failure
-- it waits a moment (EDGE_LINK_CHANGES_INTERVAL) before it asks again.
local function tail(premature)
    if premature then
        tailing = false
        return
    end
    while not exiting() do
        local ok, err = pcall(tail_once)
        if not ok or err then
            lost(ok and err or "tail: " .. err)
            sleep(config.link_changes_interval)
        end
    end
    tailing = false
end

local function start_tail()
    local ok, err = ngx.timer.at(0, tail)
    if not ok then
        log(ERR, "link changes: ", err)
        return
    end
    tailing = true
end

-- Timer handler: the cache's tick (TTLs apply again from here), and the
-- tail started again should it have stopped.
local function tick(premature)
    linkcache.tick()
    if not premature and not tailing and not exiting() then
        start_tail()
    end
end

function _M.init_worker()
    domains.use({}, domains.fallback(config), false)
    block_ms = floor(config.link_changes_interval * 1000 + 0.5)
    if block_ms < 1 then
        block_ms = 1
    end
    start_tail()
    local ok, err = ngx.timer.every(config.link_changes_interval, tick)
    if not ok then
        log(ERR, "link cache tick timer: ", err)
    end
end

return _M
