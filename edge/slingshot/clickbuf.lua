-- What a click is in the payloads of the stream's entries (docs/contract.md,
-- record format 5), which a worker's journal (journal.lua) holds as they
-- are. Pure: no ngx, so busted tests it directly (under LuaJIT).
--
-- An entry's payload:
--   <id prefix>\n<first click's number, hex>\n     (an entry's header)
--   <slug>\n<link id, or nothing>\n<rule, or nothing; for an orphan visit,
--   its kind and domain>\n<time>\n<details>\n
--                                                  (each of its clicks)
-- where `time` is the journal's (journal.lua) and `details` nginx's
-- $slingshot_visitor (nginx.conf): the request's address, User-Agent and
-- Referer, a line each. nginx refuses a header value holding a line feed,
-- an address or a time cannot hold one, and neither can a slug
-- (slug.lua), so a click is those values as they came:
-- nothing to escape, and nothing a header could inject. A request copies its
-- click's bytes from nginx's memory into the journal and makes no Lua
-- string of them: a string per click, interned and then collected, would
-- be the biggest cost of a cached redirect in Lua.
local format = string.format
local byte = string.byte
local find = string.find
local sub = string.sub
local concat = table.concat
local min = math.min

local _M = { _VERSION = "0.4.0" }

_M.UA_MAX = 512
_M.REFERER_MAX = 1024
-- The shortest address (2) and two line feeds: no field of details up to
-- this long needs cutting, which spares most clicks looking for the fields.
_M.CHECK_ABOVE = 4 + _M.UA_MAX

-- `bytes` in lower-case hex: from 8 random bytes, the per-worker half of
-- every click id (and, from 16, a password's pass, unlock.lua).
function _M.hex_prefix(bytes)
    local out = {}
    for i = 1, #bytes do
        out[i] = format("%02x", byte(bytes, i))
    end
    return concat(out)
end

-- Details with the User-Agent cut to UA_MAX bytes and the Referer to
-- REFERER_MAX, which bounds what a click costs the stream. A character cut
-- in half is the importer's to replace.
function _M.cut_details(details)
    if #details <= _M.CHECK_ABOVE then
        return details
    end
    local ip_end = find(details, "\n", 1, true)
    local ua_end = find(details, "\n", ip_end + 1, true)
    if ua_end - ip_end - 1 <= _M.UA_MAX and #details - ua_end <= _M.REFERER_MAX then
        return details
    end
    return sub(details, 1, min(ua_end - 1, ip_end + _M.UA_MAX)) .. "\n"
        .. sub(details, ua_end + 1, ua_end + _M.REFERER_MAX)
end

-- Details with `referer` in place of the request's Referer.
function _M.with_referer(details, referer)
    local ip_end = find(details, "\n", 1, true)
    return sub(details, 1, find(details, "\n", ip_end + 1, true)) .. referer
end

return _M
