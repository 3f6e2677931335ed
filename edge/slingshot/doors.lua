-- The edge's paths beside the redirect (nginx.conf's other locations):
-- each domain's own files (robots.txt, its app-link files), what it passes
-- to the dashboard (the YOURLS API, the report page, the password check),
-- Shlink's health check, its certificates, its health and its metrics.
-- The redirect and what these share with it are edge.lua's.
local config = require("slingshot.config")
local edge = require("slingshot.edge")
local redis = require("slingshot.redis")
local metrics = require("slingshot.metrics")
local cidr = require("slingshot.cidr")
local certs = require("slingshot.certs")
local shlink = require("slingshot.shlink")
local domainfiles = require("slingshot.domainfiles")

local ngx = ngx
local var = ngx.var
local header = ngx.header
local print = ngx.print
local exit = ngx.exit
local log = ngx.log
local WARN = ngx.WARN
local match = string.match
local request_domain = edge.request_domain
local to_https = edge.to_https
local answer = edge.answer

local _M = { _VERSION = "0.1.0" }

-- The domain's robots.txt: the links open to crawlers allowed, nothing else.
function _M.robots()
    local text, err = domainfiles.robots(request_domain())
    if err then
        log(WARN, "robots.txt: ", err)
    end
    ngx.status = 200
    header["Content-Type"] = "text/plain"
    print(text)
    return exit(200)
end

-- nginx.conf's /.well-known/apple-app-site-association and
-- /.well-known/assetlinks.json: the domain's file as JSON, or a 404 for a
-- domain without one (a 503 while Redis cannot be asked, so that a
-- platform's crawler comes back rather than forgets the app).
function _M.app_file(name)
    local text, err = domainfiles.get(request_domain(), name)
    if err then
        log(WARN, name, ": ", err)
        header["Retry-After"] = edge.RETRY_AFTER
        return answer(503, "unavailable", "text/plain")
    end
    if not text then
        return answer(404, "not found", "text/plain")
    end
    ngx.status = 200
    header["Content-Type"] = "application/json"
    header["Content-Length"] = #text
    print(text)
    return exit(200)
end

-- ssl_certificate_by_lua: each domain's own certificate.
function _M.certificate()
    return certs.serve(config)
end

-- nginx.conf's password-check subrequest (unlock.lua): where the dashboard
-- answers, and the edge's secret for it.
function _M.password_check_url()
    return config.password_check_url or ""
end

function _M.password_check_authorization()
    return "Bearer " .. (config.dashboard_secret or "")
end

-- Shlink's REST API on a short domain: its health check (shlink.lua).
function _M.shlink_rest()
    return shlink.rest()
end

-- nginx.conf's /yourls-api.php, which YOURLS clients ask of a short domain:
-- where the dashboard answers it (the query string kept) and the edge's
-- secret, for the proxy_pass that follows; a 404 while the dashboard or its
-- secret is not set. A domain that wants HTTPS only gets it there too.
local function to_dashboard(url)
    if not url or not config.dashboard_secret then
        return exit(404)
    end
    if request_domain().https_redirect and var.https == "" then
        return to_https()
    end
    local args = var.args
    var.slingshot_upstream = args and url .. "?" .. args or url
    var.slingshot_dashboard_auth = "Bearer " .. config.dashboard_secret
end

function _M.yourls_api()
    return to_dashboard(config.yourls_api_url)
end

-- nginx.conf's /report, a short domain's report page: passed to the
-- dashboard as the YOURLS API is; a 404 while the dashboard or its secret is
-- not set, and on HTTPS where the domain wants it.
function _M.report()
    return to_dashboard(config.report_url)
end

-- nginx.conf's /_preview/<name>, a link's uploaded preview image
-- (previews.lua's card names it): passed to the dashboard, which answers it
-- by its name (the hash of its content and its type's extension); a 404
-- for any other path, and while the dashboard or its secret is not set.
function _M.preview_image()
    local name = match(var.uri, "^/_preview/(%x+%.%a+)$")
    if not name or #name > 80 or not config.preview_image_url then
        return exit(404)
    end
    var.slingshot_upstream = config.preview_image_url .. "?name=" .. name
    var.slingshot_dashboard_auth = "Bearer " .. config.dashboard_secret
end

function _M.healthz()
    local red, err = redis.connect(config.redis_links)
    if red then
        local pong
        pong, err = red:ping()
        if pong then
            redis.release(red)
            return answer(200, "ok", "text/plain")
        end
        red:close()
        err = "redis ping: " .. err
    end
    return answer(503, "redis unavailable: " .. err, "text/plain")
end

-- Prometheus text format, for the addresses in EDGE_METRICS_ALLOW only.
function _M.metrics()
    if not cidr.contains(config.metrics_allow, var.remote_addr) then
        return answer(403, "forbidden", "text/plain")
    end
    metrics.sync()
    ngx.status = 200
    header["Content-Type"] = "text/plain; version=0.0.4"
    print(metrics.render())
    return exit(200)
end

return _M
