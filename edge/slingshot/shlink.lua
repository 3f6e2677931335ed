-- What the edge answers of Shlink's REST API on every short domain
-- (docs/compatibility.md): the health check, which Shlink's web client asks
-- of each domain it lists (/rest/health, /rest/v3/health), open to any
-- site (CORS) since it tells nothing private; any other path under /rest/
-- is Shlink's not-found problem, the API itself being the dashboard's. And
-- the image of Shlink's tracking pixel, GET /<slug>/track, which edge.lua
-- serves as a visit of the link (slug.from_pixel_path).
local cjson = require("cjson.safe")

local ngx = ngx
local var = ngx.var
local header = ngx.header
local print = ngx.print
local exit = ngx.exit
local get_method = ngx.req.get_method
local decode_base64 = ngx.decode_base64

local _M = { _VERSION = "0.1.0" }

-- The Shlink version whose API Slingshot serves: the dashboard's
-- api/shlink/health.py says why this one; edge/t/test_shlink.py holds the two equal.
_M.VERSION = "5.1.0"
_M.HEALTH_PATHS = { ["/rest/health"] = true, ["/rest/v3/health"] = true }
-- A transparent GIF of one pixel.
_M.PIXEL = decode_base64("R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7")

local HEALTH = cjson.encode({ status = "pass", version = _M.VERSION })

local function answer(status, content_type, body)
    ngx.status = status
    header["Content-Type"] = content_type
    print(body)
    return exit(status)
end

-- nginx.conf's location /rest/.
function _M.rest()
    header["Access-Control-Allow-Origin"] = "*"
    local method = get_method()
    if method == "OPTIONS" then
        header["Access-Control-Allow-Methods"] = "GET, OPTIONS"
        header["Access-Control-Allow-Headers"] = "X-Api-Key, Content-Type"
        header["Access-Control-Max-Age"] = "3600"
        return exit(204)
    end
    local uri = var.uri
    if _M.HEALTH_PATHS[uri] and (method == "GET" or method == "HEAD") then
        return answer(200, "application/health+json", HEALTH)
    end
    return answer(404, "application/problem+json", cjson.encode({
        type = "https://shlink.io/api/error/not-found",
        title = "Not found",
        detail = "Cannot " .. method .. " " .. uri,
        status = 404,
    }))
end

-- The pixel's image, for a visit the edge has recorded.
function _M.pixel()
    return answer(200, "image/gif", _M.PIXEL)
end

return _M
