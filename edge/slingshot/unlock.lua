-- Links with a password (docs/contract.md, "Password checks"). The edge asks
-- for the password itself, on the link's own domain and scheme:
--
-- 1. GET /<slug> answers 200 with the password page (pages.lua, in the
--    visitor's language), an orphan visit of kind `password`. Its form
--    posts back to the same URL, query and all, with the Referer the
--    visitor came with in a hidden field.
-- 2. POST /<slug> asks the dashboard whether the password is right (an
--    internal subrequest, nginx.conf's /_slingshot/password-check, with
--    EDGE_DASHBOARD_SECRET); the dashboard counts wrong guesses per address
--    and per link and bounds the checks per second, and a lockout it
--    answers is kept here too, so that guesses under it never reach it.
-- 3. The right password gets a pass: a random token in Redis for
--    PASS_TTL seconds with the link id, the version of its password the
--    edge knew then and that Referer, in an HttpOnly cookie for the link's
--    path, and a page that goes on (meta refresh) to GET /<slug>?<the same
--    query>.
-- 4. That GET takes the pass (GETDEL: once) and, if the link's password is
--    still of that version, is served as any request for the link: visit
--    limit, rules, split, status, forwarded query, one click with the
--    Referer of step 1 (edge.lua). A pass taken before the password
--    changed is no pass.
--
-- Step 3 answers a page rather than a redirect on purpose: browsers apply
-- the page's CSP form-action to every redirect that follows a form post,
-- and the link's target is on another site; and a 307 or 308 target would
-- be sent the password again.
local cjson = require("cjson.safe")
local config = require("slingshot.config")
local redis = require("slingshot.redis")
local clicks = require("slingshot.clicks")
local contract = require("slingshot.contract")
local clickbuf = require("slingshot.clickbuf")
local pages = require("slingshot.pages")
local html = require("slingshot.html")

local ngx = ngx
local var = ngx.var
local header = ngx.header
local print = ngx.print
local exit = ngx.exit
local log = ngx.log
local ERR = ngx.ERR
local capture = ngx.location.capture
local HTTP_POST = ngx.HTTP_POST
local get_method = ngx.req.get_method
local read_body = ngx.req.read_body
local get_post_args = ngx.req.get_post_args
local type = type
local tonumber = tonumber
local tostring = tostring
local gsub = string.gsub
local find = string.find
local sub = string.sub
local ceil = math.ceil
local io_open = io.open
local percent = html.percent

local _M = { _VERSION = "0.2.0" }

_M.COOKIE = "slingshot_unlock"
local COOKIE_VARIABLE = "cookie_" .. _M.COOKIE
-- Seconds between the right password and the GET that uses it.
_M.PASS_TTL = 60
_M.CHECK_PATH = "/_slingshot/password-check"
-- What a pass keeps of where the visitor came from (as clickbuf.REFERER_MAX).
_M.REFERER_MAX = 1024
-- Longer passwords are wrong: the dashboard keeps none longer.
local PASSWORD_MAX = pages.PASSWORD_MAX

-- The path and query of the link as the visitor asked for it: the form's
-- action and where the right password goes on to. Bytes a URL should not
-- hold as they are, and quotes, are percent-encoded.
function _M.self_url(slug, args)
    if args == nil or args == "" then
        return "/" .. slug
    end
    return "/" .. slug .. "?" .. gsub(args, "[^!#-&(-;=?-~]", percent)
end

-- A Referer as a pass keeps it: on one line, at most REFERER_MAX bytes.
function _M.clean_referer(referer)
    if type(referer) ~= "string" then
        return ""
    end
    return sub(gsub(referer, "%c", ""), 1, _M.REFERER_MAX)
end

function _M.pass_cookie(token, path, secure, max_age)
    return _M.COOKIE .. "=" .. token .. "; Path=" .. path .. "; Max-Age=" .. max_age
        .. "; HttpOnly; SameSite=Lax" .. (secure and "; Secure" or "")
end

-- What a pass is for: the link's id and the version of its password
-- (linkvalue.lua's password_version), as "<id>:<version>".
function _M.pass_for(value)
    return value.id .. ":" .. value.password_version
end

-- A pass's value in Redis: what it is for (pass_for), a line feed, the Referer.
function _M.pass_value(value, referer)
    return _M.pass_for(value) .. "\n" .. referer
end

-- The Referer a pass keeps if it is one for the link `value` with its
-- password as it is now, else nil.
function _M.pass_referer(kept, value)
    if type(kept) ~= "string" then
        return nil
    end
    local lf = find(kept, "\n", 1, true)
    if not lf or sub(kept, 1, lf - 1) ~= _M.pass_for(value) then
        return nil
    end
    return sub(kept, lf + 1)
end

-- Who a lockout is for (the dashboard's `scope`): the shared dict
-- slingshot_unlock holds each as long as it lasts (lockout_key).
local SCOPES = { "everyone", "link", "address" }
local LOCKOUT_SCOPES = { everyone = true, link = true, address = true }

-- The dashboard's answer to a check (status and body of the subrequest):
-- { outcome = "right" | "wrong" | "locked" | "unavailable", scope,
-- retry_after }, or nil and why it is not one.
function _M.answer(status, body)
    if status ~= 200 then
        return nil, "password check: the dashboard answered " .. tostring(status) .. ": "
            .. sub(tostring(body), 1, 200)
    end
    local answer = cjson.decode(body)
    if type(answer) ~= "table" then
        return nil, "password check: the dashboard's answer is not JSON"
    end
    local outcome = answer.outcome
    if outcome == "locked" then
        local wait = tonumber(answer.retry_after)
        if not LOCKOUT_SCOPES[answer.scope] or not wait or wait < 1 then
            return nil, "password check: a lockout without scope or retry_after"
        end
        return { outcome = outcome, scope = answer.scope, retry_after = ceil(wait) }
    elseif outcome == "right" or outcome == "wrong" or outcome == "unavailable" then
        return { outcome = outcome }
    end
    return nil, "password check: unknown outcome " .. tostring(outcome)
end

-- The key of the edge's own copy of a lockout (the shared dict
-- slingshot_unlock holds when it ends).
function _M.lockout_key(scope, link_id, address)
    if scope == "everyone" then
        return "everyone"
    elseif scope == "link" then
        return "link:" .. link_id
    end
    return "address:" .. link_id .. ":" .. address
end

local function known_lockout(link_id, address)
    local lockouts = ngx.shared.slingshot_unlock
    local now = ngx.now()
    for i = 1, #SCOPES do
        local ends = lockouts:get(_M.lockout_key(SCOPES[i], link_id, address))
        if ends and ends > now then
            return { outcome = "locked", scope = SCOPES[i], retry_after = ceil(ends - now) }
        end
    end
    return nil
end

local warned_unset = false

-- Whether `password` is the link's, as the dashboard says.
local function check(link_id, password)
    local address = var.remote_addr
    local known = known_lockout(link_id, address)
    if known then
        return known
    end
    if #password > PASSWORD_MAX then
        return { outcome = "wrong" }
    end
    if not config.dashboard_url or not config.dashboard_secret then
        if not warned_unset then
            log(ERR, "EDGE_DASHBOARD_URL or EDGE_DASHBOARD_SECRET is not set: ",
                "no link password can be checked")
            warned_unset = true
        end
        return { outcome = "unavailable" }
    end
    local res = capture(_M.CHECK_PATH, {
        method = HTTP_POST,
        body = cjson.encode({ link = tonumber(link_id), password = password, address = address }),
    })
    local answer, err = _M.answer(res.status, res.body)
    if not answer then
        log(ERR, err)
        return { outcome = "unavailable" }
    end
    if answer.outcome == "locked" then
        ngx.shared.slingshot_unlock:set(_M.lockout_key(answer.scope, link_id, address),
            ngx.now() + answer.retry_after, answer.retry_after)
    end
    return answer
end

local function random_token()
    local f, err = io_open("/dev/urandom", "rb")
    if not f then
        return nil, "unlock: cannot read /dev/urandom: " .. err
    end
    local bytes = f:read(16)
    f:close()
    return clickbuf.hex_prefix(bytes)
end

local function give_pass(value, referer)
    local token, err = random_token()
    if not token then
        return nil, err
    end
    local red
    red, err = redis.connect()
    if not red then
        return nil, "unlock pass: " .. err
    end
    local ok
    ok, err = red:set(contract.UNLOCK_KEY_PREFIX .. token, _M.pass_value(value, referer),
        "EX", _M.PASS_TTL)
    if not ok then
        red:close()
        return nil, "unlock pass: redis set: " .. err
    end
    redis.release(red)
    return token
end

-- A page of pages.lua in `lang`, under the pages' CSP; with its
-- Content-Length, which spares nginx the chunked encoding.
local function answer_page(status, lang, body, retry_after)
    ngx.status = status
    header["Content-Security-Policy"] = html.CSP
    header["Content-Language"] = lang
    header["Referrer-Policy"] = "same-origin"
    header["X-Frame-Options"] = "DENY"
    if retry_after then
        header["Retry-After"] = tostring(retry_after)
    end
    header["Content-Length"] = #body
    print(body)
    return exit(status)
end

local STATUS = { wrong = 403, locked = 429, empty = 400, ["cross-site"] = 403, unavailable = 503 }

-- The password page for `slug` in `lang` with what `answer` (nil: none)
-- says, an orphan visit of kind `password` on `domain` from `referer`:
-- where the visitor came from before the page, also when it is shown again.
local function ask_again(slug, domain, lang, referer, answer)
    clicks.record_from(slug, "", domain.orphan.password, referer)
    local action = _M.self_url(slug, var.args)
    if not answer then
        return answer_page(200, lang, pages.password_page(lang, action, referer))
    end
    local body = pages.password_page(lang, action, referer, pages.message(lang, answer))
    return answer_page(STATUS[answer.outcome], lang, body, answer.retry_after)
end

local function first(value)
    if type(value) == "table" then
        value = value[1]
    end
    return type(value) == "string" and value or nil
end

-- A form sent from anywhere but the password page itself is refused: it
-- would spend the visitor's guesses. Browsers send the page's own form with
-- its origin in Origin, and `Sec-Fetch-Site: same-origin`; `Origin: null`
-- is an opaque origin (a sandboxed frame, a data: page, a form on a page
-- elsewhere whose referrer policy hides its origin), never this page.
-- A client that sends neither (curl, a script) is not a browser whose
-- guesses another site could spend.
local function cross_site()
    local fetch_site = var.http_sec_fetch_site
    if fetch_site and fetch_site ~= "same-origin" then
        return true
    end
    local origin = var.http_origin
    if not origin then
        return false
    end
    return origin ~= var.scheme .. "://" .. (var.http_host or "")
end

local function sent_password(slug, value, domain, lang)
    if cross_site() then
        return ask_again(slug, domain, lang, "", { outcome = "cross-site" })
    end
    read_body()
    local args = get_post_args(10) or {}
    local referer = _M.clean_referer(first(args.ref))
    local password = first(args.password)
    if not password or password == "" then
        return ask_again(slug, domain, lang, referer, { outcome = "empty" })
    end
    local answer = check(value.id, password)
    if answer.outcome ~= "right" then
        return ask_again(slug, domain, lang, referer, answer)
    end
    local token, err = give_pass(value, referer)
    if not token then
        log(ERR, "slug ", slug, ": ", err)
        return ask_again(slug, domain, lang, referer, { outcome = "unavailable" })
    end
    header["Set-Cookie"] = _M.pass_cookie(token, "/" .. slug, var.https == "on", _M.PASS_TTL)
    return answer_page(200, lang, pages.onward_page(lang, _M.self_url(slug, var.args)))
end

-- Answers a request for the link `value` (decoded by linkvalue.lua, with a
-- password) on `domain` that has no pass: the password page, or for a
-- POST the password's check; in the visitor's language, as the 404 and 410
-- pages are.
function _M.ask(slug, value, domain)
    local lang = pages.language(var.http_accept_language)
    if get_method() == "POST" then
        return sent_password(slug, value, domain, lang)
    end
    return ask_again(slug, domain, lang, _M.clean_referer(var.http_referer), nil)
end

-- For a GET with a pass for the link `value`: takes the pass (it serves
-- once), tells the browser to forget it, and returns the Referer it
-- keeps. false when the request has no pass for the link; nil and an
-- error when Redis could not be asked.
function _M.redeem(value, slug)
    local token = var[COOKIE_VARIABLE]
    if not token or get_method() ~= "GET" then
        return false
    end
    header["Set-Cookie"] = _M.pass_cookie("", "/" .. slug, var.https == "on", 0)
    if #token ~= 32 or find(token, "[^0-9a-f]") then
        return false
    end
    local red, err = redis.connect()
    if not red then
        return nil, "unlock pass: " .. err
    end
    local kept
    kept, err = red:getdel(contract.UNLOCK_KEY_PREFIX .. token)
    if err then
        red:close()
        return nil, "unlock pass: redis getdel: " .. err
    end
    redis.release(red)
    return _M.pass_referer(kept, value) or false
end

return _M
