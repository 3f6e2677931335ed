-- IPv4 and IPv6 address ranges ("10.0.0.0/8", "::1/128"), for restricting
-- who may read /metrics. nginx's allow/deny cannot take their list from the
-- environment, so the check is made here. Pure Lua 5.1, tested by busted.
local tonumber = tonumber
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

return _M
