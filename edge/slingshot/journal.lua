-- A worker's click journal: the clicks it records, in a file of the spool
-- folder (EDGE_CLICK_SPOOL_DIR) that the worker maps into its memory, as
-- the stream's entries carry them (docs/contract.md, record format 5), and
-- per UTC hour how many it counted (hourcounts.lua). A click is written
-- into the mapping, that is into the kernel's page cache: a store as cheap
-- as one into the worker's own memory, which outlives the worker. The
-- timer sends the entries in order and notes how far it got; a worker that
-- dies leaves its journal behind, and a sibling or its successor takes it
-- over (adopt) and sends the rest. The file itself (its header, mapping,
-- locking, removing) is journalfile.lua's, the spool folder spooldir.lua's.
-- Pure LuaJIT FFI over libc, no ngx, so busted tests it directly.
--
-- After the file's header, entries back to back, each a slot (the entry's
-- bytes and clicks, written when the entry is closed; zero while it is
-- open) and the entry's `clicks` field:
--   <id prefix>\n<first click's number, hex>\n<each click's seven lines>
-- The header's `committed` is the end of the last whole click, moved after
-- each click is written, so a reader never sees half a click; `sent` is
-- where the stream's copy ends.
local ffi = require("ffi")
local journalfile = require("slingshot.journalfile")
local hourcounts = require("slingshot.hourcounts")
local clickbuf = require("slingshot.clickbuf")

local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local ffi_string = ffi.string
local format = string.format
local find = string.find
local sub = string.sub
local floor = math.floor
local max = math.max
local min = math.min
local tonumber = tonumber
local setmetatable = setmetatable
local pairs = pairs

local _M = { _VERSION = "0.3.0" }

-- How much of its journal a worker maps at a time unless told: the memory
-- it writes clicks into. What Redis has not taken yet stays in the file
-- beyond it.
_M.WINDOW = 8 * 1024 * 1024
_M.HEADER_SIZE = journalfile.HEADER_SIZE
_M.SUFFIX = journalfile.SUFFIX
-- Kinds of counts, as accounting.lua names them.
_M.REDIRECT, _M.ORPHAN = hourcounts.REDIRECT, hourcounts.ORPHAN

local HEADER_SIZE = journalfile.HEADER_SIZE
local PAGE = journalfile.PAGE
local SLOT = 8
local LF = 10
local UA_MAX, REFERER_MAX = clickbuf.UA_MAX, clickbuf.REFERER_MAX

ffi.cdef("typedef struct { uint32_t bytes; uint32_t clicks; } slingshot_journal_slot_t;")
local slot_ptr = ffi.typeof("slingshot_journal_slot_t *")
local bytes = ffi.typeof("uint8_t[?]")
local stamp_at, stamp = nil, nil

local Journal = {}
Journal.__index = Journal
for _, methods in pairs({ journalfile.methods, hourcounts.methods }) do
    for name, method in pairs(methods) do
        Journal[name] = method
    end
end

local function opened(dir, name, fd, head)
    return setmetatable({
        dir = dir, name = name, path = dir .. "/" .. name, fd = fd, header = head,
        prefix = ffi_string(head.prefix, 16),
        size = 0,          -- bytes of the file reserved so far (the writer's)
        hour = -1, counts = nil, hour_slot = nil,  -- the current hour's counts (the writer's)
        sent_counts = {},  -- hour -> redirects and orphan visits last sent
        buffer = nil, buffer_size = 0,
    }, Journal)
end

-- A new journal in `dir` for clicks with the id prefix `prefix` (16 hex
-- digits), locked by this process, at most `max_bytes` of entries, at most
-- `per_entry` clicks an entry, mapped `window` bytes at a time (WINDOW if
-- nil).
function _M.create(dir, prefix, per_entry, max_bytes, window)
    local name = prefix .. _M.SUFFIX
    window = max(PAGE, floor(min(window or _M.WINDOW, max_bytes) / PAGE) * PAGE)
    local fd, head = journalfile.create(dir, name, prefix, window)
    if not fd then
        return nil, head
    end
    local journal = opened(dir, name, fd, head)
    journal.size = HEADER_SIZE + window
    journal.window = window
    journal.max_bytes = max_bytes
    journal.per_entry = per_entry
    journal.map, journal.base, journal.window_end = nil, 0, 0
    journal.pos = HEADER_SIZE
    journal.entry_at = nil
    journal.in_entry = per_entry  -- per_entry: the next click opens an entry
    journal.seq = 0
    local mapped, err = journal:remap(0)
    if not mapped then
        journal:remove()
        return nil, err
    end
    return journal
end

-- The journal `name` in `dir` if the worker that wrote it has gone (its
-- lock is free) and no other worker has taken it over: nil otherwise, and
-- an error if it cannot be read. The count of a click its worker was
-- killed adding is taken back.
function _M.adopt(dir, name)
    local fd, head = journalfile.open_left(dir, name)
    if not fd then
        return nil, head
    end
    hourcounts.undo_pending(head)
    return opened(dir, name, fd, head)
end

-- Ends the open entry: its slot gets its size and clicks. The next click
-- opens another.
function Journal:close_entry()
    local at = self.entry_at
    if at then
        local slot = ffi_cast(slot_ptr, self.map + (at - self.base))
        slot.bytes = self.pos - at - SLOT
        slot.clicks = self.in_entry
        self.entry_at = nil
        self.in_entry = self.per_entry
    end
end

-- Opens an entry for a click of `need` bytes, in a new window if this
-- one has no room for it.
function Journal:open_entry(need)
    self:close_entry()
    local head = self.prefix .. "\n" .. format("%x", self.seq + 1) .. "\n"
    local total = SLOT + #head + need
    if self.pos + total > self.window_end then
        local ok, err = self:remap(total)
        if not ok then
            return nil, err
        end
    end
    local at = self.map + (self.pos - self.base)
    local slot = ffi_cast(slot_ptr, at)
    slot.bytes, slot.clicks = 0, 0
    ffi_copy(at + SLOT, head, #head)
    self.entry_at = self.pos
    self.pos = self.pos + total - need
    self.in_entry = 0
    return true
end

-- Writes `len` bytes of `value` (a pointer, or a Lua string) and a line
-- feed at `at`; returns where the next line starts.
local function put_line(at, value, len)
    if len > 0 then
        ffi_copy(at, value, len)
    end
    at[len] = LF
    return at + len + 1
end

-- The time line of a click at `when` (Unix seconds, to the millisecond):
-- made once for the clicks of a millisecond.
local function time_line(when)
    if when ~= stamp_at then
        stamp_at, stamp = when, format("%.3f\n", when)
    end
    return stamp
end

-- Appends a click on `slug` served by the link `link_id` (its id as a
-- string of digits; "" for an orphan visit) through `rule` (what
-- rules.pick chose, "" for the link's own url; for an orphan visit its
-- kind and domain) at `when` (Unix seconds, to the millisecond), from the
-- address `ip_len` bytes at `ip`, with the User-Agent and Referer `ua_len`
-- and `ref_len` bytes at `ua` and `ref` (each a pointer, or a Lua string;
-- cut here to UA_MAX and REFERER_MAX bytes), and with `kind` (if given)
-- counts it in the UTC hour of `when` (as count does) so that no crash
-- leaves one without the other. Returns its number, or nil and an error
-- when the journal has no room for it (and then counts nothing).
function Journal:add(slug, link_id, rule, ip, ip_len, ua, ua_len, ref, ref_len, kind, when)
    if ua_len > UA_MAX then
        ua_len = UA_MAX
    end
    if ref_len > REFERER_MAX then
        ref_len = REFERER_MAX
    end
    local time = time_line(when)
    local slug_len, id_len, rule_len, time_len = #slug, #link_id, #rule, #time
    local need = slug_len + id_len + rule_len + time_len + ip_len + ua_len + ref_len + 6
    if self.in_entry >= self.per_entry or self.pos + need > self.window_end then
        local ok, err = self:open_entry(need)
        if not ok then
            return nil, err
        end
    end
    local pos = self.pos
    local at = self.map + (pos - self.base)
    at = put_line(at, slug, slug_len)
    at = put_line(at, link_id, id_len)
    at = put_line(at, rule, rule_len)
    ffi_copy(at, time, time_len)  -- its line feed included
    at = put_line(at + time_len, ip, ip_len)
    at = put_line(at, ua, ua_len)
    put_line(at, ref, ref_len)
    pos = pos + need
    self.pos = pos
    self.in_entry = self.in_entry + 1
    local seq = self.seq + 1
    self.seq = seq
    local head = self.header
    if kind then
        local counts, hour_slot = self:hour_counts(when)
        local n = counts[kind] + 1
        head.pending_count = n
        head.pending_index = hour_slot * 3 + kind
        head.pending_pos = pos  -- last: until it is stored, nothing is pending
        counts[kind] = n
    end
    head.committed = pos
    head.clicks = seq
    return seq
end

-- `count` bytes of the file from `offset`: a pointer to them and how many
-- there are, or nil and an error. Where the writer's window maps them (as
-- it does all that Redis has not taken, unless Redis has been away for a
-- window's worth of clicks), they are read there, with no copy; else
-- into the journal's buffer.
function Journal:bytes_at(offset, count)
    local map, base = self.map, self.base
    if map and offset >= base and offset + count <= self.window_end then
        return map + (offset - base), count
    end
    if self.buffer_size < count then
        self.buffer, self.buffer_size = bytes(count), count
    end
    local got, err = self:read(self.buffer, count, offset)
    if not got then
        return nil, err
    end
    return self.buffer, got
end

-- The entries not yet sent, oldest first, about `max_bytes` of them (at
-- least one): their payloads, and where they end in the file and in
-- clicks, for sent(); nil when there are none. The writer's open entry is
-- closed first, so that no entry goes out in part; one still open in a
-- journal whose writer died ends at `committed`.
function Journal:unsent(max_bytes)
    if self.entry_at then
        self:close_entry()
    end
    local head = self.header
    local from, to, clicks = head.sent, head.committed, head.clicks
    if from >= to then
        return nil
    end
    local want = min(to - from, max(max_bytes, SLOT))
    local buffer, got = self:bytes_at(from, want)
    if not buffer then
        return nil, got
    end
    local payloads, off, last_first, last_count = {}, 0, 0, 0
    while off + SLOT <= got do
        local slot = ffi_cast(slot_ptr, buffer + off)
        local size, count = slot.bytes, slot.clicks
        local left = to - from - off - SLOT
        if size == 0 then
            size = left  -- the open entry: up to the last whole click
        elseif size > left then
            return nil, "click journal " .. self.path .. ": an entry runs past its end"
        end
        if off + SLOT + size > got then
            if off == 0 then  -- an entry longer than asked for: read it whole
                return self:unsent(SLOT + size)
            end
            break
        end
        local payload = ffi_string(buffer + off + SLOT, size)
        local number_end = find(payload, "\n", 18, true)
        last_first = tonumber(sub(payload, 18, number_end - 1), 16)
        last_count = count
        payloads[#payloads + 1] = payload
        off = off + SLOT + size
    end
    if from + off >= to then
        return payloads, to, clicks
    end
    return payloads, from + off, last_first + last_count - 1
end

-- Notes that every entry up to `offset` (`clicks` clicks) is in the stream.
function Journal:sent(offset, clicks)
    local head = self.header
    head.sent, head.sent_clicks = offset, clicks
end

-- Where the entries end: what unsent reads up to.
function Journal:committed()
    return self.header.committed
end

-- Clicks and bytes not yet sent.
function Journal:waiting()
    local head = self.header
    return head.clicks - head.sent_clicks, head.committed - head.sent
end

-- Bytes of entries the file holds, sent or not.
function Journal:length()
    return self.header.committed - _M.HEADER_SIZE
end

return _M
