-- Pure helpers for the click buffer: ids, and the payloads of the stream
-- entries (docs/contract.md, record format 2). No ngx here, so busted
-- tests it directly.
--
-- A worker's buffer is one flat array, FIELDS slots per click:
--   slug, details, orphan
-- where `details` is nginx's $slingshot_click (nginx.conf): the request's
-- time, address, User-Agent and Referer, a line each:
--   <msec>\n<address>\n<User-Agent>\n<Referer>
-- nginx refuses a header value holding a line feed, an address or a time
-- cannot hold one, and neither can a slug (slug.lua), so a payload is those
-- values as they came, a line each: nothing to escape or check byte by
-- byte when a timer flushes the buffer, and nothing a header could inject.
-- Clicks are numbered in the order they were buffered; a payload names its
-- first click's number, and the importer counts on from there.
local format = string.format
local byte = string.byte
local find = string.find
local sub = string.sub
local concat = table.concat
local min = math.min

local _M = { _VERSION = "0.3.0" }

_M.FIELDS = 3
_M.UA_MAX = 512
_M.REFERER_MAX = 1024

local LINK_CLICK = "\n0\n"
local ORPHAN_VISIT = "\n1\n"
-- The time (14 bytes), the shortest address (2) and three line feeds: no
-- field of details up to this long needs cutting, which spares most clicks
-- looking for the fields.
local CHECK_ABOVE = 19 + _M.UA_MAX

-- 16 hex digits from 8 random bytes: the per-worker half of every click id.
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
    if #details <= CHECK_ABOVE then
        return details
    end
    local ip_end = find(details, "\n", find(details, "\n", 1, true) + 1, true)
    local ua_end = find(details, "\n", ip_end + 1, true)
    if ua_end - ip_end - 1 <= _M.UA_MAX and #details - ua_end <= _M.REFERER_MAX then
        return details
    end
    return sub(details, 1, min(ua_end - 1, ip_end + _M.UA_MAX)) .. "\n"
        .. sub(details, ua_end + 1, ua_end + _M.REFERER_MAX)
end

-- Turns `count` clicks of a buffer, numbered from `first_seq`, into stream
-- entry payloads of at most `per_entry` clicks each, appended to `out`.
function _M.payloads(prefix, first_seq, buffer, count, per_entry, out)
    local entries = #out
    local fields = _M.FIELDS
    local cut = _M.cut_details
    local parts = {}
    local done = 0
    while done < count do
        local size = min(per_entry, count - done)
        parts[1] = prefix
        parts[2] = "\n"
        parts[3] = format("%x", first_seq + done)
        parts[4] = "\n"
        local n = 4
        local first = done * fields
        for i = first + 1, first + size * fields, fields do
            parts[n + 1] = buffer[i]
            parts[n + 2] = buffer[i + 2] and ORPHAN_VISIT or LINK_CLICK
            parts[n + 3] = cut(buffer[i + 1])
            parts[n + 4] = "\n"
            n = n + 4
        end
        entries = entries + 1
        out[entries] = concat(parts, "", 1, n)
        done = done + size
    end
    return out
end

return _M
