-- `make bench`'s case (n) (loadtest/edgebench_nginx.py without_clicks): the
-- edge's own clicks module, found before it on lua_package_path, with its
-- recording taken out, so that the edge serves as it does and writes no
-- click.
local clicks = dofile(ngx.config.prefix() .. "edge/slingshot/clicks.lua")

function clicks.record() end

function clicks.record_from() end

return clicks
