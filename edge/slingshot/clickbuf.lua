-- What a click is in the payloads of the stream's entries (docs/contract.md,
-- record format 5), which a worker's journal (journal.lua) writes and holds
-- as they are. Pure: no ngx, so busted tests it directly (under LuaJIT).
--
-- An entry's payload:
--   <id prefix>\n<first click's number, hex>\n     (an entry's header)
--   <slug>\n<link id, or nothing>\n<rule, or nothing; for an orphan visit,
--   its kind and domain>\n<time>\n<address>\n<User-Agent>\n<Referer>\n
--                                                  (each of its clicks)
-- where the time is nginx's cached clock, and the address and headers are
-- the request's as nginx keeps them (clicks.lua), cut to UA_MAX and
-- REFERER_MAX bytes. nginx refuses a header value holding a line feed, an
-- address or a time cannot hold one, and neither can a slug (slug.lua), so
-- a click is those values as they came: nothing to escape, and nothing a
-- header could inject. A request copies its click's bytes from nginx's
-- memory into the journal and makes no Lua string of them: a string per
-- click, interned and then collected, would be the biggest cost of a
-- cached redirect in Lua.
local format = string.format
local byte = string.byte
local concat = table.concat

local _M = { _VERSION = "0.5.0" }

_M.UA_MAX = 512
_M.REFERER_MAX = 1024

-- `bytes` in lower-case hex: from 8 random bytes, the per-worker half of
-- every click id (and, from 16, a password's pass, unlock.lua).
function _M.hex_prefix(bytes)
    local out = {}
    for i = 1, #bytes do
        out[i] = format("%02x", byte(bytes, i))
    end
    return concat(out)
end

return _M
