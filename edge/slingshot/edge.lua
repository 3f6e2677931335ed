-- Entry points called from nginx.conf, one per phase. Each
-- `*_by_lua_block` in nginx.conf is a single call into this module.
local config = require("slingshot.config")
local slugs = require("slingshot.slug")
local link = require("slingshot.linkvalue")
local linkcache = require("slingshot.linkcache")
local linkchanges = require("slingshot.linkchanges")
local clicks = require("slingshot.clicks")
local metrics = require("slingshot.metrics")
local visits = require("slingshot.visits")
local rules = require("slingshot.rules")
local domains = require("slingshot.domains")
local unlock = require("slingshot.unlock")
local shlink = require("slingshot.shlink")
local pages = require("slingshot.pages")
local previews = require("slingshot.previews")
local html = require("slingshot.html")
local nginxvar = require("slingshot.nginxvar")

local ngx = ngx
local var = ngx.var
local header = ngx.header
local say = ngx.say
local print = ngx.print
local exit = ngx.exit
local redirect = ngx.redirect
local get_method = ngx.req.get_method
local time = ngx.time
local now = ngx.now
local log = ngx.log
local ERR = ngx.ERR
local get_uri_args = ngx.req.get_uri_args
local crc32_short = ngx.crc32_short
local WARN = ngx.WARN

local _M = { _VERSION = "0.2.0" }

local function outcome(name)
    return metrics.labelled(metrics.REQUESTS, "outcome", name)
end
local REDIRECTED = outcome("redirect")
local NOT_FOUND = outcome("not_found")
local INVALID_SLUG = outcome("invalid_slug")
local DISABLED = outcome("disabled")
local EXPIRED = outcome("expired")
local SCHEDULED = outcome("scheduled")
local LIMIT_REACHED = outcome("limit_reached")
local LISTED = outcome("listed")
local BLOCKED = outcome("blocked")
local PASSWORD = outcome("password")
local UNAVAILABLE = outcome("unavailable")
local ROOT = outcome("root")
local PIXEL = outcome("pixel")
local PREVIEW = outcome("preview")

-- The request's path where nginx keeps it: only a slug is made a string of it.
local read_uri = nginxvar.reader("uri")

function _M.init()
    config.load()
    metrics.init()
    clicks.init()
    visits.init()
end

-- One timer per worker sends clicks and their counts, and moves counters
-- into the shared dict; run once more at exit, it sends what is left.
local function tick(premature)
    clicks.flush(premature)
    local ok, err = visits.flush()
    if not ok then
        log(WARN, "visits counted here not sent yet: ", err)
    end
    metrics.sync()
end

function _M.init_worker()
    linkcache.init_worker()
    linkchanges.init_worker()
    clicks.init_worker()
    local ok, err = ngx.timer.every(config.click_flush_interval, tick)
    if not ok then
        log(ERR, "click flush timer: ", err)
    end
end

-- HTML unless told: nginx.conf's default_type and charset fill in the
-- Content-Type, which saves setting it from Lua on every 404. nginx.conf
-- adds Cache-Control too (add_header), for the same reason.
local function answer(status, body, content_type)
    ngx.status = status
    if content_type then
        header["Content-Type"] = content_type
    end
    say(body)
    return exit(status)
end

-- Redis could not be asked, and nothing cached stands in: a 503 that tells
-- visitors and crawlers to come back shortly (a failover takes seconds).
local RETRY_AFTER = "5"
local function unavailable(slug, err)
    metrics.inc(UNAVAILABLE)
    log(ERR, "slug ", slug, ": ", err)
    header["Retry-After"] = RETRY_AFTER
    return answer(503, pages.UNAVAILABLE)
end

local function send_to(url, status)
    return redirect(url, status or 302)
end

-- A page of the product for a visitor the link does not send on (pages.lua):
-- in the visitor's language, under the pages' CSP (html.lua).
local function page(status, kind, domain)
    local lang = pages.language(var.http_accept_language)
    ngx.status = status
    header["Content-Security-Policy"] = html.CSP
    header["Content-Language"] = lang
    local body, length = pages.for_domain(domain, kind, lang, config.report_url ~= nil)
    header["Content-Length"] = length
    print(body)
    return exit(status)
end

-- A page made for one link (pages.warning_page, pages.blocked_page): made
-- for each visit, as such visits are few.
local function link_page(status, make, ...)
    local lang = pages.language(var.http_accept_language)
    local body = make(lang, ...)
    ngx.status = status
    header["Content-Security-Policy"] = html.CSP
    header["Content-Language"] = lang
    header["Content-Length"] = #body
    print(body)
    return exit(status)
end

-- An unknown, disabled or malformed slug: the domain's not-found redirect
-- (the default domain's is EDGE_NOT_FOUND_URL) or a 404 page (pages.lua).
local function not_found(domain)
    local url = domain.not_found_url
    if url then
        return send_to(url)
    end
    -- The page is made once per domain and language: a flood of unknown
    -- slugs pays a header read and a table lookup per request.
    return page(404, "not_found", domain)
end

-- What a link's rules may ask of the request (rules.pick), read only when
-- a condition needs it. $slingshot_country is nginx.conf's geoip2 lookup,
-- made only when read; nil where the module is not loaded.
local MAX_ARGS = 100
local request = {
    user_agent = function() return var.http_user_agent end,
    accept_language = function() return var.http_accept_language end,
    args = function() return (get_uri_args(MAX_ARGS)) end,
    country = function() return var.slingshot_country end,
    -- The address a click records (clicks.lua), and the
    -- time of the request as nginx caches it (no clock read per call).
    address = function() return var.remote_addr end,
    now = now,
    -- The same visitor (address and User-Agent) always lands on the same
    -- destination of a split.
    visitor = function()
        return crc32_short((var.remote_addr or "") .. "\n" .. (var.http_user_agent or ""))
    end,
}

-- A link that has expired or used its visits (`kind`, the 410 page's): to
-- its fallback (expired_url), or its domain's, or the 410 page. The visit
-- is an orphan visit of its kind either way, which the caller records.
local function gone(value, domain, kind)
    local url = value.expired_url or domain.expired_url
    if url then
        return send_to(url)
    end
    return page(410, kind, domain)
end

-- A link that is disabled, scheduled, expiring, limited or locked by a
-- password: what plain links are spared. A visit to a link that is not
-- served (past its visit limit too) is no click of the link but an orphan
-- visit, as to an unknown slug. A tracking pixel's visit (`pixel`) is
-- counted the same way and answered with the image instead of a target.
local function redirect_special(slug, value, domain, pixel)
    local state = link.state(value, value.timed and time())
    if state == "disabled" then
        metrics.inc(DISABLED)
        clicks.record(slug, "", domain.orphan.disabled)
        return not_found(domain)
    elseif state == "listed" or state == "warned" then
        -- Its destination is on a blocklist: a 451, or a warning with a way
        -- on (the way on is the destination itself, not through here), each
        -- an orphan visit of kind `listed`, so that the accounting holds.
        metrics.inc(LISTED)
        clicks.record(slug, "", domain.orphan.listed)
        if state == "listed" then
            return page(451, "listed", domain)
        end
        local short_url = var.scheme .. "://" .. var.host .. "/" .. slug
        return link_page(200, pages.warning_page, value.url, short_url, config.report_url ~= nil)
    elseif state == "blocked" then
        -- Stopped by staff (moderation): a 451 with the operator's words.
        metrics.inc(BLOCKED)
        clicks.record(slug, "", domain.orphan.blocked)
        return link_page(451, pages.blocked_page, value.blocked, config.report_url ~= nil)
    elseif state == "scheduled" then
        metrics.inc(SCHEDULED)
        clicks.record(slug, "", domain.orphan.scheduled)
        return not_found(domain)
    elseif state == "expired" then
        metrics.inc(EXPIRED)
        clicks.record(slug, "", domain.orphan.expired)
        return gone(value, domain, "expired")
    end
    -- An app unfurling the short URL: the link's card, which is no visit.
    if value.preview and not pixel and previews.crawler(var.http_user_agent) then
        metrics.inc(PREVIEW)
        local short_url = var.scheme .. "://" .. var.host .. "/" .. slug
        return link_page(200, previews.page, value.preview, short_url,
            value.locked and short_url or value.url)
    end
    -- A visitor let through the password: where they came from before
    -- the password page; false for a request without a pass (unlock.lua).
    local referer = false
    if value.locked then
        local err
        referer, err = unlock.redeem(value, slug)
        if referer == nil then
            return unavailable(slug, err)
        end
    end
    local asking = value.locked and not referer
    if value.visits_key then
        -- The password page takes no visit: it only looks.
        local admitted, err = visits.admit(value, not asking and get_method() ~= "HEAD")
        if admitted == nil then
            return unavailable(slug, err)
        elseif not admitted then
            metrics.inc(LIMIT_REACHED)
            clicks.record(slug, "", domain.orphan.limit)
            return gone(value, domain, "limit")
        end
    end
    if asking then
        metrics.inc(PASSWORD)
        return unlock.ask(slug, value, domain)
    end
    local url, rule
    if value.rules and not pixel then
        url, rule = rules.pick(value.rules, request)
    end
    if referer then
        clicks.record_from(slug, value.id, rule, referer)
    else
        clicks.record(slug, value.id, rule)
    end
    if pixel then
        metrics.inc(PIXEL)
        return shlink.pixel()
    end
    metrics.inc(REDIRECTED)
    return send_to(link.target(value, value.forward_query and var.args, url), value.status)
end

-- The domain of the request: its Host is read only when there is more
-- than the default domain.
local function request_domain()
    if domains.multi then
        return domains.for_host(var.host)
    end
    return domains.default
end

-- A domain that wants HTTPS only: the same URL over HTTPS (308 keeps the method).
local function to_https()
    return redirect("https://" .. var.host .. config.https_port_suffix .. var.request_uri, 308)
end

function _M.redirect()
    local domain = request_domain()
    if domain.https_redirect and var.https == "" then
        return to_https()
    end
    local at, len = read_uri()
    local slug = at and slugs.from_bytes(at, len, config.slug_min_length, config.slug_max_length,
        config.slug_alphabet)
    -- Shlink's tracking pixel, /<slug>/track: a visit of the link, answered with an image.
    local pixel = false
    local uri
    if not slug then
        uri = var.uri
        slug = slugs.from_pixel_path(uri, config.slug_min_length, config.slug_max_length,
            config.slug_alphabet)
        pixel = slug ~= nil
    end
    if not slug then
        if uri == "/" then
            metrics.inc(ROOT)
            if domain.root_url then
                return send_to(domain.root_url)
            end
        else
            metrics.inc(INVALID_SLUG)
        end
        return not_found(domain)
    end
    local prefix = domain.prefix
    local value, err = linkcache.get(prefix and prefix .. slug or slug)
    if value == nil then
        return unavailable(slug, err)
    end
    if not value then
        metrics.inc(NOT_FOUND)
        clicks.record(slug, "", domain.orphan.unknown)  -- an orphan visit (none for HEAD)
        return not_found(domain)
    end
    if not value.plain then
        return redirect_special(slug, value, domain, pixel)
    end
    clicks.record(slug, value.id)
    if pixel then
        metrics.inc(PIXEL)
        return shlink.pixel()
    end
    metrics.inc(REDIRECTED)
    -- Reading a variable costs as much as the rest of a hit: only when used.
    return send_to(link.target(value, value.forward_query and var.args), value.status)
end

-- What the other doors (doors.lua) answer with, as the redirect does.
_M.request_domain = request_domain
_M.to_https = to_https
_M.answer = answer
_M.RETRY_AFTER = RETRY_AFTER

return _M
