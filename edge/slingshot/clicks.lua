-- Click recording. A request writes its click into its worker's journal
-- (journal.lua: a file of the click spool, mapped into memory, which
-- outlives the worker) and counts it for its hour; it never waits for
-- Redis, nor reads the clock: the time is nginx's cached one, and the
-- visitor's address and headers are copied from where nginx keeps them.
-- The worker's journals are clickspool.lua's; its timer (clicksend.lua)
-- appends the journal's entries to the Redis stream in order, several
-- clicks an entry (docs/contract.md), sends the hour counts
-- (accounting.lua), and takes over the journals of workers that have gone.
local clickspool = require("slingshot.clickspool")
local clicksend = require("slingshot.clicksend")
local hourcounts = require("slingshot.hourcounts")
local nginxvar = require("slingshot.nginxvar")
local metrics = require("slingshot.metrics")

local ngx = ngx
local log = ngx.log
local ERR = ngx.ERR
local now = ngx.now
local get_method = ngx.req.get_method

local _M = { _VERSION = "0.7.0" }

local BUFFERED = metrics.CLICKS_BUFFERED
local ORPHANS = metrics.CLICKS_ORPHAN
local DROPPED = metrics.CLICKS_DROPPED
local REDIRECT, ORPHAN = hourcounts.REDIRECT, hourcounts.ORPHAN

-- What a click records of its visitor, where nginx keeps it: the address,
-- and the User-Agent and Referer headers (nil when absent).
local address = nginxvar.reader("remote_addr")
local user_agent = nginxvar.reader("http_user_agent")
local request_referer = nginxvar.reader("http_referer")

-- Counts a click of `kind` at `t` dropped for want of a journal.
local function count_lost(kind, t)
    metrics.inc(DROPPED)  -- logged when the journal could not be made
    local lost = clickspool.lost
    if lost then  -- nil if its id prefix could not be drawn either
        lost:count(kind, t)
    end
end

-- Writes a click, whose Referer is `ref_len` bytes at `ref` (a pointer or
-- a string; nil: none), into the journal.
local function write_click(slug, link_id, rule, ref, ref_len)
    local kind, t = link_id == "" and ORPHAN or REDIRECT, now()
    local journal = clickspool.own
    if not journal then
        return count_lost(kind, t)
    end
    local ip, ip_len = address()
    local ua, ua_len = user_agent()
    if not ua then
        ua, ua_len = "", 0
    end
    if not ref then
        ref, ref_len = "", 0
    end
    local seq, err = journal:add(slug, link_id, rule or "", ip, ip_len, ua, ua_len, ref, ref_len,
        kind, t)
    if not seq then
        -- Counted served even when the journal has no room, so that the loss shows.
        journal:count(kind, t)
        metrics.inc(DROPPED)
        if not clickspool.full_since then
            clickspool.full_since = t
            log(ERR, "clicks dropped until there is room: ", err)
        end
        return
    end
    metrics.inc(BUFFERED)
    if link_id == "" then
        metrics.inc(ORPHANS)
    end
    if clickspool.exited then
        -- The exit flush has run and no timer runs after it: requests still
        -- finishing in an old worker send their own clicks (or, if it is
        -- sending, leave them to the worker that takes the journal over).
        clicksend.flush()
    end
end

-- Writes the current request's click on `slug`, served by the link whose
-- id is `link_id` (a string of digits) through `rule` (rules.pick's label,
-- or nil for the link's own url), or an orphan visit (a slug without a
-- link, or whose link is not served) when `link_id` is "", and then `rule`
-- is the visit's kind and domain (domains.orphan_labels), into the
-- worker's journal. A HEAD request is no click. The timer sends it.
function _M.record(slug, link_id, rule)
    if get_method() == "HEAD" then
        return
    end
    local ref, ref_len = request_referer()
    return write_click(slug, link_id, rule, ref, ref_len)
end

-- As record, with `referer` in place of the request's Referer: for a
-- visitor let through a link's password, the page they came from before
-- the password page (unlock.lua). `referer` holds no line feed.
function _M.record_from(slug, link_id, rule, referer)
    if get_method() == "HEAD" then
        return
    end
    return write_click(slug, link_id, rule, referer, #referer)
end

-- The click timer's handler (clicksend.lua).
_M.flush = clicksend.flush

-- The spool folder, from nginx's master (init phase): made if missing,
-- and given to the workers' user.
_M.init = clickspool.prepare

-- The worker's own journal, made as it starts.
function _M.init_worker()
    clickspool.make_own()
end

return _M
