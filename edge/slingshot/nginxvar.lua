-- Reads an nginx variable where nginx keeps it, without making a Lua string
-- of it: a pointer into the request's memory and a length, valid until the
-- request ends. For the click details, which are copied straight into the
-- click journal (journal.lua), and the request's path, of which only a slug
-- becomes a string (slug.from_bytes); `ngx.var` would intern each as a new
-- Lua string, for the garbage collector to free again.
--
-- This is what `ngx.var.NAME` does inside lua-resty-core (resty/core/var.lua),
-- through the same FFI entry of ngx_lua, which OpenResty and Debian's ngx_lua
-- both have; resty.core.var declares it.
local ffi = require("ffi")
local base = require("resty.core.base")
require("resty.core.var")

local C = ffi.C
local ffi_new = ffi.new
local tonumber = tonumber
local error = error
local get_request = base.get_request

local _M = { _VERSION = "0.1.0" }

local NGX_OK = 0

-- Returns a function that gives the pointer to and length of the variable
-- `name` of the current request, or nil when it is not set.
function _M.reader(name)
    local len = #name
    local lowcase = ffi_new("char[?]", len)
    local value = ffi_new("char *[1]")
    local value_len = ffi_new("size_t[1]")
    local err = ffi_new("char *[1]")
    return function()
        local r = get_request()
        if not r then
            error("no request found")
        end
        local rc = C.ngx_http_lua_ffi_var_get(r, name, len, lowcase, 0, value, value_len, err)
        if rc ~= NGX_OK then
            return nil
        end
        return value[0], tonumber(value_len[0])
    end
end

return _M
