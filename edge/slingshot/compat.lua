-- The one place where OpenResty and Debian's ngx_lua stack differ.
--
-- OpenResty ships lua-resty-redis as `resty.redis`; Debian packages the same
-- library (lua-nginx-redis) as `nginx.redis`. Everything else the edge uses
-- (resty.core, resty.lrucache, cjson, ngx.*) has the same name on both.
local _M = { _VERSION = "0.1.0" }

local ok, redis = pcall(require, "resty.redis")
if not ok then
    redis = require("nginx.redis")
end

_M.redis = redis

return _M
