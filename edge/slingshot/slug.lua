-- Which request paths can name a link. Checked before any cache or Redis
-- lookup, so junk paths cost nothing.
local find = string.find

local _M = { _VERSION = "0.1.0" }

_M.MAX_LENGTH = 64

-- `path` is the normalised request URI, e.g. "/abc".
-- Returns the slug, or nil when the path cannot be a slug.
function _M.from_path(path, max_length)
    local n = #path
    if n < 2 or n > (max_length or _M.MAX_LENGTH) + 1 then
        return nil
    end
    if find(path, "[^%w_%-]", 2) then
        return nil
    end
    return path:sub(2)
end

return _M
