-- Pure helpers for the click buffer: ids, JSON for the stream entries.
-- No ngx here, so busted tests it directly.
--
-- A worker's buffer is one flat array, FIELDS slots per click:
--   seq, slug, ts (Unix ms), details, orphan
-- where `details` is nginx's $slingshot_click (nginx.conf), the tail of
-- the click's JSON object that nginx joins from the request:
--   <address>","ua":"<User-Agent>"\n,"ref":"<Referer>
-- (the line feed is JSON whitespace, and a sure separator: no header value
-- can hold one). Requests only append to the buffer; the JSON is put
-- together when a timer flushes it, mostly from the strings as they are.
local cjson = require("cjson")

local format = string.format
local byte = string.byte
local find = string.find
local sub = string.sub
local concat = table.concat
local encode = cjson.encode

local _M = { _VERSION = "0.2.0" }

_M.FIELDS = 5
_M.UA_MAX = 512
_M.REFERER_MAX = 1024

local REPLACEMENT = "\239\191\189"  -- U+FFFD

-- 16 hex digits from 8 random bytes: the per-worker half of every click id.
function _M.hex_prefix(bytes)
    local out = {}
    for i = 1, #bytes do
        out[i] = format("%02x", byte(bytes, i))
    end
    return concat(out)
end

-- A 32-hex-digit click id: the worker prefix and a 64-bit counter.
function _M.click_id(prefix, seq)
    return prefix .. format("%016x", seq)
end

-- Replaces every byte that is not part of well-formed UTF-8 (say, a Latin-1
-- User-Agent, or a character cut in half at UA_MAX) with U+FFFD, so the
-- entry stays valid JSON for the importer instead of a dead letter.
function _M.valid_utf8(s)
    local out, n = {}, 0
    local i, len, run = 1, #s, 1
    while i <= len do
        local c = byte(s, i)
        local size = c < 128 and 1 or c >= 194 and c <= 223 and 2
            or c >= 224 and c <= 239 and 3 or c >= 240 and c <= 244 and 4 or 0
        local ok = size > 0 and i + size - 1 <= len
        if ok and size > 1 then
            for k = i + 1, i + size - 1 do
                local d = byte(s, k)
                if d < 128 or d > 191 then
                    ok = false
                    break
                end
            end
            local d = byte(s, i + 1)
            if (c == 224 and d < 160) or (c == 237 and d > 159)       -- overlong, surrogate
                    or (c == 240 and d < 144) or (c == 244 and d > 143) then -- overlong, > U+10FFFF
                ok = false
            end
        end
        if ok then
            i = i + size
        else
            out[n + 1], out[n + 2] = sub(s, run, i - 1), REPLACEMENT
            n = n + 2
            i = i + 1
            run = i
        end
    end
    if n == 0 then
        return s
    end
    out[n + 1] = sub(s, run)
    return concat(out)
end

-- A JSON string, cut to `max` bytes, escaped and valid UTF-8.
function _M.json_string(s, max)
    if max and #s > max then
        s = sub(s, 1, max)
    end
    return encode(_M.valid_utf8(s))
end

-- The common case: ASCII without quotes, backslashes or control characters,
-- short enough that no field needs cutting. Such details go into the JSON
-- as they are.
local CLEAN = "[^%c\"\\\128-\255]*"
local CLEAN_DETAILS = "^" .. CLEAN .. '","ua":"' .. CLEAN .. '"\n,"ref":"' .. CLEAN .. "$"

-- Anything else: split on the separators and encode each field.
local function careful_details(details)
    local ua_at = find(details, '","ua":"', 1, true)
    local ref_at = find(details, '"\n,"ref":"', ua_at, true)
    return '"ip":' .. _M.json_string(sub(details, 1, ua_at - 1))
        .. ',"ua":' .. _M.json_string(sub(details, ua_at + 8, ref_at - 1), _M.UA_MAX)
        .. ',"ref":' .. _M.json_string(sub(details, ref_at + 10), _M.REFERER_MAX)
end

-- Appends the JSON of the click at buffer slot i to `parts`, from parts[n + 1].
-- Returns the new n.
local function append_click(parts, n, prefix, buffer, i)
    parts[n + 1] = '{"id":"'
    parts[n + 2] = prefix
    parts[n + 3] = format("%016x", buffer[i])
    parts[n + 4] = '","ts":'
    parts[n + 5] = buffer[i + 2]
    parts[n + 6] = ',"slug":"'
    parts[n + 7] = buffer[i + 1]
    local details = buffer[i + 3]
    local orphan = buffer[i + 4]
    if #details <= _M.UA_MAX and find(details, CLEAN_DETAILS) then
        parts[n + 8] = '","ip":"'
        parts[n + 9] = details
        parts[n + 10] = orphan and '","orphan":true}' or '"}'
    else
        parts[n + 8] = '",'
        parts[n + 9] = careful_details(details)
        parts[n + 10] = orphan and ',"orphan":true}' or "}"
    end
    return n + 10
end

-- The click object of docs/contract.md, as JSON, for buffer slot i.
function _M.click_json(prefix, buffer, i)
    local parts = {}
    local n = append_click(parts, 0, prefix, buffer, i)
    return concat(parts, "", 1, n)
end

-- Turns the first `count` clicks of a buffer into stream entry payloads of at
-- most `per_entry` clicks each, JSON arrays as docs/contract.md describes.
function _M.payloads(prefix, buffer, count, per_entry)
    local out, entries = {}, 0
    local parts, n, size = { "[" }, 1, 0
    local fields = _M.FIELDS
    for k = 1, count do
        if size > 0 then
            n = n + 1
            parts[n] = ","
        end
        n = append_click(parts, n, prefix, buffer, (k - 1) * fields + 1)
        size = size + 1
        if size == per_entry or k == count then
            n = n + 1
            parts[n] = "]"
            entries = entries + 1
            out[entries] = concat(parts, "", 1, n)
            n, size = 1, 0
        end
    end
    return out
end

return _M
