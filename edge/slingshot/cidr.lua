-- IPv4 and IPv6 address ranges ("10.0.0.0/8", "::1/128"), for restricting
-- who may read /metrics (nginx's allow/deny cannot take their list from the
-- environment, so the check is made here) and for redirect rules by the
-- visitor's address (rules.lua). Pure LuaJIT, tested by busted.
local band = require("bit").band
local tonumber = tonumber
local type = type
local floor = math.floor
local find = string.find
local sub = string.sub
local char = string.char
local byte = string.byte
local gmatch = string.gmatch
local concat = table.concat

local _M = { _VERSION = "0.1.0" }

local function ipv4(text)
    local a, b, c, d = text:match("^(%d+)%.(%d+)%.(%d+)%.(%d+)$")
    if not a then
        return nil
    end
    a, b, c, d = tonumber(a), tonumber(b), tonumber(c), tonumber(d)
    if a > 255 or b > 255 or c > 255 or d > 255 then
        return nil
    end
    return char(a, b, c, d)
end

local function groups(text)
    local out = {}
    if text == "" then
        return out
    end
    for group in gmatch(text .. ":", "([^:]*):") do
        if not find(group, "^%x%x?%x?%x?$") then
            return nil
        end
        local value = tonumber(group, 16)
        out[#out + 1] = char(floor(value / 256), value % 256)
    end
    return out
end

local function ipv6(text)
    if text:match("^::ffff:%d+%.%d+%.%d+%.%d+$") then
        return ipv4(sub(text, 8))  -- IPv4-mapped: compare as IPv4
    end
    local gap = find(text, "::", 1, true)
    local head, tail
    if gap then
        head, tail = groups(sub(text, 1, gap - 1)), groups(sub(text, gap + 2))
        if not head or not tail or find(text, "::", gap + 1, true) or #head + #tail > 7 then
            return nil
        end
    else
        head, tail = groups(text), {}
        if not head or #head ~= 8 then
            return nil
        end
    end
    local zeros = {}
    for i = 1, 8 - #head - #tail do
        zeros[i] = "\0\0"
    end
    return concat(head) .. concat(zeros) .. concat(tail)
end

-- The address as 4 or 16 bytes, or nil if it is not an IP address.
function _M.address(text)
    if find(text, ":", 1, true) then
        return ipv6(text)
    end
    return ipv4(text)
end

-- Parses "a.b.c.d/n, x::y/n, ..." (a bare address means just that address).
-- Returns a list of ranges, or nil and the part that could not be read.
function _M.parse_list(text)
    local ranges = {}
    for item in gmatch(text, "[^,%s]+") do
        local addr, bits = item:match("^([^/]+)/(%d+)$")
        addr = _M.address(addr or item)
        if not addr then
            return nil, "not an address or CIDR range: " .. item
        end
        bits = tonumber(bits) or #addr * 8
        if bits > #addr * 8 then
            return nil, "prefix too long: " .. item
        end
        ranges[#ranges + 1] = { addr = addr, bits = bits }
    end
    return ranges
end

local function within(addr, range)
    local prefix = range.addr
    if #addr ~= #prefix then
        return false
    end
    local whole = floor(range.bits / 8)
    if sub(addr, 1, whole) ~= sub(prefix, 1, whole) then
        return false
    end
    local rest = range.bits % 8
    if rest == 0 then
        return true
    end
    local unit = 2 ^ (8 - rest)
    return floor(byte(addr, whole + 1) / unit) == floor(byte(prefix, whole + 1) / unit)
end

-- True if the address text falls in one of the ranges.
function _M.contains(ranges, text)
    local addr = _M.address(text)
    if not addr then
        return false
    end
    for i = 1, #ranges do
        if within(addr, ranges[i]) then
            return true
        end
    end
    return false
end

-- A redirect rule's address pattern, as Shlink writes them: an address
-- ("192.0.2.7", "2001:db8::1"), a CIDR range ("192.0.2.0/24",
-- "2001:db8::/32") or an IPv4 address with `*` for any octet ("10.*.*.1").
-- IPv4 compiles to a mask and the masked value, so that a visitor's
-- address, as a number, is compared with one `band`; IPv6 to a range.
-- Nil when the text is none of these.
function _M.pattern(text)
    if type(text) ~= "string" then
        return nil
    end
    if find(text, "*", 1, true) then
        local mask, want, n = 0, 0, 0
        for octet in gmatch(text .. ".", "([^.]*)%.") do
            n = n + 1
            local value = tonumber(octet)
            if octet == "*" then
                value = 0
            elseif not find(octet, "^%d%d?%d?$") or value > 255 then
                return nil
            end
            mask = mask * 256 + (octet == "*" and 0 or 255)
            want = want * 256 + value
        end
        if n ~= 4 then
            return nil
        end
        return { mask = band(mask, -1), want = band(want, mask) }
    end
    local ranges = _M.parse_list(text)
    local range = ranges and #ranges == 1 and ranges[1]
    if not range or find(text, ",", 1, true) then
        return nil
    end
    if #range.addr == 16 then
        return { addr = range.addr, bits = range.bits }
    end
    local a, b, c, d = byte(range.addr, 1, 4)
    local hosts = 2 ^ (32 - range.bits)
    local mask = 2 ^ 32 - hosts
    return { mask = band(mask, -1), want = band(((a * 256 + b) * 256 + c) * 256 + d, mask) }
end

local DOT, ZERO = byte("."), byte("0")

-- A visitor's address as the rules compare it: an IPv4 address as a number
-- (read digit by digit: no string is made), an IPv6 one as its 16 bytes
-- (an IPv4-mapped one as IPv4), false for anything else.
function _M.visitor(text)
    if type(text) ~= "string" then
        return false
    end
    local value, octet, digits, dots = 0, 0, 0, 0
    for i = 1, #text do
        local c = byte(text, i)
        if c == DOT then
            if digits == 0 or dots == 3 then
                return _M.visitor_v6(text)
            end
            value, octet, digits, dots = value * 256 + octet, 0, 0, dots + 1
        elseif c >= ZERO and c <= ZERO + 9 and digits < 3 then
            octet, digits = octet * 10 + c - ZERO, digits + 1
            if octet > 255 then
                return false
            end
        else
            return _M.visitor_v6(text)
        end
    end
    if dots ~= 3 or digits == 0 then
        return false
    end
    return value * 256 + octet
end

function _M.visitor_v6(text)
    local addr = find(text, ":", 1, true) and ipv6(text)
    if not addr then
        return false
    elseif #addr == 4 then
        local a, b, c, d = byte(addr, 1, 4)
        return ((a * 256 + b) * 256 + c) * 256 + d
    end
    return addr
end

-- Whether a visitor's address (`visitor`'s) is in a pattern (`pattern`'s).
function _M.matches(pattern, address)
    if type(address) == "number" then
        return pattern.mask ~= nil and band(address, pattern.mask) == pattern.want
    elseif address then
        return pattern.addr ~= nil and within(address, pattern)
    end
    return false
end

return _M
