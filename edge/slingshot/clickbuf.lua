-- Pure helpers for the click buffer: ids and stream entry payloads.
-- No ngx here, so busted tests them directly.
local cjson = require("cjson")

local floor = math.floor
local format = string.format
local byte = string.byte
local concat = table.concat
local encode = cjson.encode

local _M = { _VERSION = "0.1.0" }

local TWO_32 = 4294967296

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
    return format("%s%08x%08x", prefix, floor(seq / TWO_32), seq % TWO_32)
end

-- Splits clicks[1..count] into stream entry payloads of at most `per_entry`
-- clicks each, JSON arrays as docs/contract.md describes.
function _M.payloads(clicks, count, per_entry)
    local out, n = {}, 0
    local chunk, size = {}, 0
    for i = 1, count do
        size = size + 1
        chunk[size] = clicks[i]
        if size == per_entry or i == count then
            n = n + 1
            out[n] = encode(chunk)
            chunk, size = {}, 0
        end
    end
    return out
end

return _M
