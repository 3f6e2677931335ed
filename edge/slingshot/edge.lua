-- Entry points called from nginx.conf, one per phase. Each
-- `*_by_lua_block` in nginx.conf is a single call into this module.
local config = require("slingshot.config")
local slugs = require("slingshot.slug")
local link = require("slingshot.link")
local links = require("slingshot.links")
local clicks = require("slingshot.clicks")
local redis = require("slingshot.redis")

local ngx = ngx
local var = ngx.var
local header = ngx.header
local say = ngx.say
local exit = ngx.exit
local redirect = ngx.redirect
local time = ngx.time
local log = ngx.log
local ERR = ngx.ERR

local _M = { _VERSION = "0.1.0" }

function _M.init()
    config.load()
end

function _M.init_worker()
    links.init_worker()
    clicks.init_worker()
end

local function answer(status, body)
    ngx.status = status
    header["Content-Type"] = "text/html; charset=utf-8"
    header["Cache-Control"] = config.cache_control
    say(body)
    return exit(status)
end

local function not_found()
    return answer(404, "<!doctype html><title>Not found</title><h1>Not found</h1>"
        .. "<p>There is no link here.</p>")
end

function _M.redirect()
    local slug = slugs.from_path(var.uri)
    if not slug then
        return not_found()
    end
    local value, err = links.get(slug)
    if value == nil then
        log(ERR, "slug ", slug, ": ", err)
        return answer(503, "<!doctype html><title>Unavailable</title>"
            .. "<h1>Temporarily unavailable</h1><p>Please try again shortly.</p>")
    end
    if not value then
        return not_found()
    end
    local state = link.state(value, time())
    if state == "disabled" then
        return not_found()
    elseif state == "expired" then
        return answer(410, "<!doctype html><title>Gone</title><h1>Gone</h1>"
            .. "<p>This link has expired.</p>")
    end
    if var.request_method ~= "HEAD" then
        clicks.record(slug)
    end
    header["Cache-Control"] = config.cache_control
    return redirect(link.target(value, var.args), value.status)
end

function _M.healthz()
    local red, err = redis.connect()
    if red then
        local pong
        pong, err = red:ping()
        if pong then
            redis.release(red)
            return answer(200, "ok")
        end
        red:close()
        err = "redis ping: " .. err
    end
    return answer(503, "redis unavailable: " .. err)
end

return _M
