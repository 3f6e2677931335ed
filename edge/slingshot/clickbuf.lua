-- The click buffer of a worker, and the payloads of its stream entries
-- (docs/contract.md, record format 5). Pure: LuaJIT's FFI, no ngx, so
-- busted tests it directly (under LuaJIT).
--
-- Clicks are written straight into byte chunks the way the stream carries
-- them, one entry after another:
--   <id prefix>\n<first click's number, hex>\n     (an entry's header)
--   <slug>\n<link id, or nothing>\n<rule, or nothing; for an orphan visit,
--   its kind and domain>\n<details>\n
--                                                  (each of its clicks)
-- where `details` is nginx's $slingshot_click (nginx.conf): the request's
-- time, address, User-Agent and Referer, a line each. nginx refuses a header
-- value holding a line feed, an address or a time cannot hold one, and
-- neither can a slug (slug.lua), so a click is those values as they came:
-- nothing to escape, and nothing a header could inject. A request copies its
-- click's bytes from nginx's memory into the chunk and makes no Lua string
-- of them: a string per click, interned and then collected, would be the
-- biggest cost of a cached redirect in Lua. Each entry lies within one
-- chunk, so `take` makes one string an entry.
local ffi = require("ffi")

local ffi_new = ffi.new
local ffi_copy = ffi.copy
local ffi_string = ffi.string
local format = string.format
local byte = string.byte
local find = string.find
local sub = string.sub
local concat = table.concat
local min = math.min
local setmetatable = setmetatable
local error = error

local _M = { _VERSION = "0.4.0" }

_M.UA_MAX = 512
_M.REFERER_MAX = 1024
-- The time (14 bytes), the shortest address (2) and three line feeds: no
-- field of details up to this long needs cutting, which spares most clicks
-- looking for the fields.
_M.CHECK_ABOVE = 19 + _M.UA_MAX
_M.CHUNK_SIZE = 1024 * 1024

local LF = 10
-- The longest label of what served a click (rules.lua: "ab10", "20").
_M.RULE_MAX = 4
-- The longest third line of an orphan visit: its kind ("scheduled"), a
-- space and a host (domains.HOST_MAX).
_M.ORPHAN_LABEL_MAX = 9 + 1 + 253
-- The longest click a chunk must hold: a slug of 64, a link id of 19
-- digits or an orphan visit's label, and details cut down to the time, an
-- IPv6 address, User-Agent and Referer, each with its line feed.
local CLICK_MAX = 64 + 1 + 19 + 1 + _M.ORPHAN_LABEL_MAX + 1 + 14 + 1 + 45 + 1 + _M.UA_MAX + 1
    + _M.REFERER_MAX + 1

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
    local ip_end = find(details, "\n", find(details, "\n", 1, true) + 1, true)
    local ua_end = find(details, "\n", ip_end + 1, true)
    if ua_end - ip_end - 1 <= _M.UA_MAX and #details - ua_end <= _M.REFERER_MAX then
        return details
    end
    return sub(details, 1, min(ua_end - 1, ip_end + _M.UA_MAX)) .. "\n"
        .. sub(details, ua_end + 1, ua_end + _M.REFERER_MAX)
end

-- Details with `referer` in place of the request's Referer.
function _M.with_referer(details, referer)
    local ip_end = find(details, "\n", find(details, "\n", 1, true) + 1, true)
    return sub(details, 1, find(details, "\n", ip_end + 1, true)) .. referer
end

local Buffer = {}
Buffer.__index = Buffer

-- A buffer whose clicks are numbered from 1, with `prefix` as the id prefix
-- of its entries, at most `per_entry` clicks an entry.
function _M.new(prefix, per_entry, chunk_size)
    chunk_size = chunk_size or _M.CHUNK_SIZE
    if chunk_size < 2 * CLICK_MAX + 64 then
        error("click buffer chunks must hold a few clicks, got " .. chunk_size .. " bytes")
    end
    return setmetatable({
        prefix = prefix,
        per_entry = per_entry,
        chunk_size = chunk_size,
        chunks = {},     -- allocated once, reused after every take
        chunk = nil,     -- the chunk being written, chunks[used]
        used = 0,
        pos = 0,         -- bytes of it written
        entries = 0,     -- entries since the last take: chunk number, start, stop
        entry_chunk = {}, entry_start = {}, entry_stop = {},
        in_entry = per_entry,  -- clicks in the last entry; per_entry: open a new one
        seq = 0,         -- the last click's number
        count = 0,       -- clicks since the last take
    }, Buffer)
end

-- Ends the last entry and starts one for a click of `need` bytes, in a new
-- chunk if this one has no room for it.
function Buffer:open(need)
    local entries = self.entries
    if entries > 0 then
        self.entry_stop[entries] = self.pos
    end
    local header = self.prefix .. "\n" .. format("%x", self.seq + 1) .. "\n"
    if self.chunk == nil or self.pos + #header + need > self.chunk_size then
        local used = self.used + 1
        local chunk = self.chunks[used]
        if not chunk then
            chunk = ffi_new("uint8_t[?]", self.chunk_size)
            self.chunks[used] = chunk
        end
        self.used, self.chunk, self.pos = used, chunk, 0
    end
    entries = entries + 1
    self.entries = entries
    self.entry_chunk[entries] = self.used
    self.entry_start[entries] = self.pos
    ffi_copy(self.chunk + self.pos, header, #header)
    self.pos = self.pos + #header
    self.in_entry = 0
end

-- Appends a click on `slug` served by the link `link_id` (its id as a
-- string of digits; "" for an orphan visit) through `rule` (the label
-- rules.pick gave, at most RULE_MAX bytes; "" for the link's own url; for
-- an orphan visit its kind and domain, at most ORPHAN_LABEL_MAX bytes),
-- whose details are `len` bytes at `details` (a pointer, or a Lua string),
-- which must be cut already if longer than CHECK_ABOVE (cut_details).
-- Returns its number.
function Buffer:add(slug, link_id, rule, details, len)
    local slug_len, id_len, rule_len = #slug, #link_id, #rule
    local need = slug_len + id_len + rule_len + len + 4
    if self.in_entry >= self.per_entry or self.pos + need > self.chunk_size then
        self:open(need)
    end
    local at = self.chunk + self.pos
    ffi_copy(at, slug, slug_len)
    at[slug_len] = LF
    at = at + slug_len + 1
    ffi_copy(at, link_id, id_len)
    at[id_len] = LF
    at = at + id_len + 1
    if rule_len > 0 then
        ffi_copy(at, rule, rule_len)
    end
    at[rule_len] = LF
    at = at + rule_len + 1
    ffi_copy(at, details, len)
    at[len] = LF
    self.pos = self.pos + need
    self.in_entry = self.in_entry + 1
    self.count = self.count + 1
    local seq = self.seq + 1
    self.seq = seq
    return seq
end

-- Appends the payloads of every click since the last take to `out`, and
-- empties the buffer. Returns `out` and how many clicks it took.
function Buffer:take(out)
    local entries, count = self.entries, self.count
    if entries == 0 then
        return out, 0
    end
    self.entry_stop[entries] = self.pos
    local n = #out
    local chunks, chunk_of, starts, stops = self.chunks, self.entry_chunk, self.entry_start,
        self.entry_stop
    for i = 1, entries do
        n = n + 1
        out[n] = ffi_string(chunks[chunk_of[i]] + starts[i], stops[i] - starts[i])
    end
    self.entries, self.count = 0, 0
    self.used, self.chunk, self.pos = 0, nil, 0
    self.in_entry = self.per_entry
    return out, count
end

return _M
