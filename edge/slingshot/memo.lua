-- What a request header made (rules.lua's devices and languages, pages.lua's
-- language), kept by the header's value for the next visitor who sends the
-- same: at most SIZE values a memo, each at most TEXT bytes long (a longer
-- one is worked out again at each request), so that a memo holds a few
-- hundred kilobytes at most; a full memo is emptied and starts again.
-- Pure Lua: the string functions a header is read with are ones LuaJIT
-- cannot compile, and a visitor's header is seldom new.
local clear_table = require("table.clear")

local type = type

local _M = { _VERSION = "0.1.0" }

_M.SIZE = 1000
_M.TEXT = 512

-- The key of a header the visitor did not send (nil cannot be a key).
local ABSENT = {}

-- `make` behind a memo: a function of the header's value, nil when the
-- header is not there.
function _M.of(make)
    local made, n = {}, 0
    return function(text)
        local key = text
        if key == nil then
            key = ABSENT
        end
        local value = made[key]
        if value == nil then
            value = make(text)
            if text == nil or type(text) == "string" and #text <= _M.TEXT then
                if n >= _M.SIZE then
                    clear_table(made)
                    n = 0
                end
                made[key] = value
                n = n + 1
            end
        end
        return value
    end
end

return _M
