-- The writing of a worker's click journal (journal.lua): each click of
-- its requests written into its ring in memory (journalring.lua), in
-- entries as the stream's entries carry them (docs/contract.md, record
-- format 5), and counted per UTC hour (hourcounts.lua); and what the ring
-- holds copied into the file by the timer before the ring comes round to
-- it. Pure LuaJIT FFI, no ngx, so busted tests it directly.
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
local journalread = require("slingshot.journalread")
local clickbuf = require("slingshot.clickbuf")

local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local format = string.format
local min = math.min

local _M = { _VERSION = "0.1.0" }

local HEADER_SIZE = journalfile.HEADER_SIZE
local SLOT, slot_ptr = journalread.SLOT, journalread.slot_ptr
local LF = 10
local UA_MAX, REFERER_MAX = clickbuf.UA_MAX, clickbuf.REFERER_MAX

local stamp_at, stamp = nil, nil

-- The methods of a journal that write it, given its `header`, `ring`,
-- `window`, `max_bytes`, `per_entry`, `pos`, `copied`, `seq` and open
-- entry (`entry_at`, `in_entry`), and its `make_ring` (journal.lua).
local Methods = {}
_M.methods = Methods

-- The size of the ring a writer makes to write the clicks of requests
-- still finishing after it settled its journal at exit (settle).
local LAST_RING = 64 * 1024

-- Sets how far the writer may write: the ring may not come round to what
-- the file does not hold yet, nor the journal grow past its bound.
function Methods:set_limit()
    self.limit = min(self.copied + self.window, HEADER_SIZE + self.max_bytes)
end

-- Copies into the file the clicks the ring holds that it does not, the
-- open entry closed first (the file never holds a slot that will change),
-- so that the ring may come round to them. True, or nil and an error.
function Methods:copy()
    local ring = self.ring
    if not ring then
        return true
    end
    self:close_entry()
    local from, to = self.copied, self.pos
    if to > from then
        local ok, err = self:write(ring:at(from), to - from, from)
        if not ok then
            return nil, err
        end
        local head = self.header
        head.copied, head.copied_clicks = to, self.seq
        self.copied = to
        self:set_limit()
    end
    return true
end

-- Ends the open entry: its slot gets its size and clicks. The next click
-- opens another.
function Methods:close_entry()
    local at = self.entry_at
    if at then
        local slot = ffi_cast(slot_ptr, self.ring:at(at))
        slot.bytes = self.pos - at - SLOT
        slot.clicks = self.in_entry
        self.entry_at = nil
        self.in_entry = self.per_entry
    end
end

-- Opens an entry for a click of `need` bytes, the ring copied into the
-- file first if it has no room for it (and made if it was settled).
function Methods:open_entry(need)
    if not self.ring then
        local made, err = self:make_ring(LAST_RING)
        if not made then
            return nil, err
        end
    end
    self:close_entry()
    local head = self.prefix .. "\n" .. format("%x", self.seq + 1) .. "\n"
    local total = SLOT + #head + need
    local stop = self.pos + total
    if stop - HEADER_SIZE > self.max_bytes then
        return nil, "click journal " .. self.path .. " is full (" .. self.max_bytes .. " bytes)"
    end
    if stop > self.limit then
        local ok, err = self:copy()
        if not ok then
            return nil, err
        end
        if stop > self.limit then
            return nil, "click journal " .. self.path .. ": a click of " .. total
                .. " bytes is more than its memory holds (" .. self.window .. ")"
        end
    end
    local at = self.ring:at(self.pos)
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
function Methods:add(slug, link_id, rule, ip, ip_len, ua, ua_len, ref, ref_len, kind, when)
    if ua_len > UA_MAX then
        ua_len = UA_MAX
    end
    if ref_len > REFERER_MAX then
        ref_len = REFERER_MAX
    end
    local time = time_line(when)
    local slug_len, id_len, rule_len, time_len = #slug, #link_id, #rule, #time
    local need = slug_len + id_len + rule_len + time_len + ip_len + ua_len + ref_len + 6
    if self.in_entry >= self.per_entry or self.pos + need > self.limit then
        local ok, err = self:open_entry(need)
        if not ok then
            return nil, err
        end
    end
    local pos = self.pos
    local at = self.ring:at(pos)
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

return _M
