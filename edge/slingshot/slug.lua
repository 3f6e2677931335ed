-- Which request paths can name a link. Checked before any cache or Redis
-- lookup, so junk paths cost nothing.
local ffi = require("ffi")

local find = string.find
local sub = string.sub
local byte = string.byte
local ffi_cast = ffi.cast
local ffi_string = ffi.string
local bytes_at = ffi.typeof("const uint8_t *")

local _M = { _VERSION = "0.3.0" }

_M.DEFAULT_ALPHABET = "A-Za-z0-9_-"
_M.MIN_LENGTH = 1
_M.MAX_LENGTH = 64

local function alnum(c)
    return c ~= nil and find(c, "^%w$") ~= nil
end

-- Compiles an alphabet such as "A-Za-z0-9_-" (characters and ranges of
-- letters or digits) into the set of the bytes it allows, {[byte] = true}.
-- Returns nil and a reason for an alphabet a path could not carry.
function _M.alphabet(spec)
    local allowed, n = {}, 0
    local i, len = 1, #spec
    while i <= len do
        local c = sub(spec, i, i)
        local b = byte(c)
        if b <= 32 or b >= 127 or c == "/" or c == "%" or c == "?" or c == "#"
                or c == '"' or c == "\\" then
            -- Paths could not carry these, and a slug goes into the click
            -- stream as it is, a line of its own (clickbuf.lua); quotes and
            -- backslashes would need escaping wherever a slug is quoted.
            return nil, "alphabet may hold printable ASCII except / % ? # \" \\ and space, got "
                .. ("%q"):format(spec)
        end
        local last = sub(spec, i + 2, i + 2)
        n = n + 1
        if sub(spec, i + 1, i + 1) == "-" and alnum(c) and alnum(last) then
            if last < c then
                return nil, "alphabet range " .. c .. "-" .. last .. " is backwards"
            end
            for allow = b, byte(last) do
                allowed[allow] = true
            end
            i = i + 3
        else
            allowed[b] = true
            i = i + 1
        end
    end
    if n == 0 then
        return nil, "alphabet is empty"
    end
    return allowed
end

local DEFAULT_ALLOWED = assert(_M.alphabet(_M.DEFAULT_ALPHABET))

-- The slug in the `n` bytes at `at` of a normalised request URI, e.g.
-- "/abc": a pointer where nginx keeps it (nginxvar.lua), or a Lua string.
-- `allowed` is a set from _M.alphabet. Nil when the path cannot be a slug.
-- A byte at a time, which LuaJIT compiles (a Lua pattern it cannot), and
-- the slug is the only string made: each is interned, and among many
-- unknown slugs' strings that lookup misses the cache.
function _M.from_bytes(at, n, min_length, max_length, allowed)
    if n < (min_length or _M.MIN_LENGTH) + 1 or n > (max_length or _M.MAX_LENGTH) + 1 then
        return nil
    end
    allowed = allowed or DEFAULT_ALLOWED
    local path = ffi_cast(bytes_at, at)
    for i = 1, n - 1 do
        if not allowed[path[i]] then
            return nil
        end
    end
    return ffi_string(path + 1, n - 1)
end

-- As from_bytes, of the Lua string `path`.
function _M.from_path(path, min_length, max_length, allowed)
    return _M.from_bytes(path, #path, min_length, max_length, allowed)
end

local TRACK = "/track"

-- The slug of Shlink's tracking pixel path, "/<slug>/track"; nil for any other.
function _M.from_pixel_path(path, min_length, max_length, allowed)
    local n = #path
    if n <= #TRACK or sub(path, n - #TRACK + 1) ~= TRACK then
        return nil
    end
    return _M.from_path(sub(path, 1, n - #TRACK), min_length, max_length, allowed)
end

return _M
