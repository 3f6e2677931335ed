-- The file name a TLS server name's certificate is kept under
-- (certs.lua): pure, for busted.
local type = type
local find = string.find
local lower = string.lower
local byte = string.byte
local sub = string.sub

local _M = { _VERSION = "0.1.0" }

-- The default certificate's name, which no server name maps to.
_M.DEFAULT = "default"

-- The file name a server name's certificate is kept under, or nil for a
-- name that cannot be one of ours (which then gets the default
-- certificate): lower case, a trailing dot removed, letters, digits,
-- hyphens and dots only, no empty label.
function _M.file_name(server_name)
    if type(server_name) ~= "string" or #server_name == 0 or #server_name > 254 then
        return nil
    end
    local name = lower(server_name)
    if byte(name, -1) == 46 then  -- "."
        name = sub(name, 1, -2)
    end
    if name == "" or find(name, "[^a-z0-9.-]") or find(name, "..", 1, true)
        or byte(name, 1) == 46 or name == _M.DEFAULT then
        return nil
    end
    return name
end

return _M
