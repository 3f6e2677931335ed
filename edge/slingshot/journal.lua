-- A worker's click journal: the clicks it records, in a file of the spool
-- folder (EDGE_CLICK_SPOOL_DIR), as the stream's entries carry them
-- (docs/contract.md, record format 5), and per UTC hour how many it
-- counted (hourcounts.lua). A click is written into a ring in memory
-- (journalring.lua), a file of tmpfs mapped into the worker: a store as
-- cheap as one into the worker's own memory, which outlives the worker.
-- The timer copies what the ring holds into the file (copy) before the
-- ring comes round to it, sends the entries in order and notes how far it
-- got; a worker that dies leaves its journal and its ring behind, and a
-- sibling or its successor takes them over (adopt), copies the ring into
-- the file, and sends the rest. The file itself (its header, locking,
-- writing, removing) is journalfile.lua's, its reading by the timer
-- journalread.lua's, the spool folder spooldir.lua's. Pure LuaJIT FFI
-- over libc, no ngx, so busted tests it directly.
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
local journalring = require("slingshot.journalring")
local journalread = require("slingshot.journalread")
local hourcounts = require("slingshot.hourcounts")
local clickbuf = require("slingshot.clickbuf")

local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local ffi_string = ffi.string
local format = string.format
local sub = string.sub
local floor = math.floor
local max = math.max
local min = math.min
local setmetatable = setmetatable
local pairs = pairs

local _M = { _VERSION = "0.3.0" }

-- The size of a worker's ring unless told: the memory it writes clicks
-- into, copied into the file before the ring comes round.
_M.WINDOW = 8 * 1024 * 1024
_M.RING_SUFFIX = ".ring"
_M.HEADER_SIZE = journalfile.HEADER_SIZE
_M.SUFFIX = journalfile.SUFFIX
-- Kinds of counts, as accounting.lua names them.
_M.REDIRECT, _M.ORPHAN = hourcounts.REDIRECT, hourcounts.ORPHAN

local HEADER_SIZE = journalfile.HEADER_SIZE
local PAGE = journalfile.PAGE
local SLOT, slot_ptr = journalread.SLOT, journalread.slot_ptr
local LF = 10
local UA_MAX, REFERER_MAX = clickbuf.UA_MAX, clickbuf.REFERER_MAX

local stamp_at, stamp = nil, nil

local Journal = {}
Journal.__index = Journal
for _, methods in pairs({ journalfile.methods, journalread.methods, hourcounts.methods }) do
    for name, method in pairs(methods) do
        Journal[name] = method
    end
end

local function opened(dir, name, fd, head)
    return setmetatable({
        dir = dir, name = name, path = dir .. "/" .. name, fd = fd, header = head,
        prefix = ffi_string(head.prefix, 16),
        hour = -1, counts = nil, hour_slot = nil,  -- the current hour's counts (the writer's)
        sent_counts = {},  -- hour -> redirects and orphan visits last sent
        buffer = nil, buffer_size = 0,
    }, Journal)
end

-- The size of the ring a writer makes to write the clicks of requests
-- still finishing after it settled its journal at exit (settle).
local LAST_RING = 64 * 1024

-- Sets how far the writer may write: the ring may not come round to what
-- the file does not hold yet, nor the journal grow past its bound.
function Journal:set_limit()
    self.limit = min(self.copied + self.window, HEADER_SIZE + self.max_bytes)
end

-- Gives the writer a ring of `size` bytes in its ring folder, named in its
-- header: `ring` if given (a spare's, in that folder), else a new one.
-- True, or nil and an error.
function Journal:make_ring(size, ring)
    local err
    if not ring then
        ring, err = journalring.create(self.ring_dir .. "/" .. self.prefix .. _M.RING_SUFFIX, size)
        if not ring then
            return nil, err
        end
    end
    local path = ring.path
    local named, name_err = journalfile.name_ring(self.header, path, size)
    if not named then
        ring:close(true)
        return nil, name_err
    end
    self.ring, self.window = ring, size
    self:set_limit()
    return true
end

-- A new journal in `dir` for clicks with the id prefix `prefix` (16 hex
-- digits), locked by this process, at most `max_bytes` of entries (in
-- whole pages), at most `per_entry` clicks an entry, written through a
-- ring of `window` bytes (WINDOW if nil) in the folder `ring_dir` (`dir`
-- if nil); in the file of `spare` if given (a journal made a spare by
-- make_spare, through its ring if it has one of that size there; or
-- open_spare's), else a new one.
function _M.create(dir, prefix, per_entry, max_bytes, window, ring_dir, spare)
    local name = prefix .. _M.SUFFIX
    ring_dir = ring_dir or dir
    max_bytes = max(PAGE, floor(max_bytes / PAGE) * PAGE)
    window = max(PAGE, floor(min(window or _M.WINDOW, max_bytes) / PAGE) * PAGE)
    local ring = spare and spare.ring
    if ring then
        spare.ring = nil
        if ring.size ~= window or sub(ring.path, 1, #ring_dir + 1) ~= ring_dir .. "/" then
            ring:close(true)
            ring = nil
        end
    end
    local fd, head
    if spare then
        fd, head = journalfile.reuse(spare, dir, name, prefix, ring)
    else
        fd, head = journalfile.create(dir, name, prefix)
    end
    if not fd then
        if ring then
            ring:close(true)
        end
        return nil, head
    end
    local journal = opened(dir, name, fd, head)
    journal.ring_dir = ring_dir
    journal.max_bytes = max_bytes
    journal.per_entry = per_entry
    journal.pos = HEADER_SIZE
    journal.copied = HEADER_SIZE
    journal.entry_at = nil
    journal.in_entry = per_entry  -- per_entry: the next click opens an entry
    journal.seq = 0
    local made, err = journal:make_ring(window, ring)
    if not made then
        journal:remove()
        return nil, err
    end
    return journal
end

-- Copies into the file what the ring of a journal left behind holds past
-- `copied`, and deletes the ring; a journal whose ring went with the
-- machine keeps the entries a sync wrote to disk. True, or nil and an
-- error.
function Journal:take_ring()
    local head = self.header
    local path, size = journalfile.ring_of(head)
    if not path then
        return true
    end
    local ring, err
    if size then
        ring, err = journalring.open(path, size)
        if err then
            return nil, err
        end
    end
    if ring then
        local from, to = head.copied, head.committed
        local ok, write_err = true, nil
        if to > from then
            ok, write_err = self:write(ring:at(from), to - from, from)
        end
        ring:close()
        if not ok then
            return nil, write_err
        end
    else
        local clicks = head.clicks
        if head.durable > head.sent then
            head.committed, head.clicks = head.durable, head.durable_clicks
        else
            head.committed, head.clicks = head.sent, head.sent_clicks
        end
        self.lost = clicks - head.clicks
    end
    head.copied, head.copied_clicks = head.committed, head.clicks
    local synced, sync_err = self:sync()
    if not synced then
        return nil, sync_err
    end
    head.ring[0] = 0
    journalring.remove(path)
    return true
end

-- The journal `name` in `dir` if the worker that wrote it has gone (its
-- lock is free) and no other worker has taken it over: nil otherwise, and
-- an error if it cannot be read. The count of a click its worker was
-- killed adding is taken back, and its ring copied into its file; `lost`
-- is how many clicks went with a ring the machine lost.
function _M.adopt(dir, name)
    local fd, head = journalfile.open_left(dir, name)
    if not fd then
        return nil, head
    end
    hourcounts.undo_pending(head)
    local journal = opened(dir, name, fd, head)
    local ok, err = journal:take_ring()
    if not ok then
        journal:close()
        return nil, "click journal " .. journal.path .. ": " .. err
    end
    return journal
end

-- Copies into the file the clicks the ring holds that it does not, the
-- open entry closed first (the file never holds a slot that will change),
-- so that the ring may come round to them. True, or nil and an error.
function Journal:copy()
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

-- Copies the rest of the ring into the file, writes it to disk, and
-- deletes the ring: the journal is its file alone, as one taken over is,
-- until its writer adds a click again. True, or nil and an error (the
-- ring stays).
function Journal:settle()
    if not self.ring then
        return true
    end
    local ok, err = self:copy()
    if ok then
        ok, err = self:sync()
    end
    if not ok then
        return nil, err
    end
    self.header.ring[0] = 0
    self.ring:close(true)
    self.ring, self.limit = nil, 0  -- a click after this makes a ring (open_entry)
    return true
end

local file_close = journalfile.methods.close

-- Lets go of the journal (and its ring), leaving them for another worker
-- to take over.
function Journal:close()
    if self.ring then
        self.ring:close()
        self.ring = nil
    end
    file_close(self)
end

-- Deletes the ring of the spare `spare`, if it has one: it is let go of
-- (its worker exits), or it is another worker's (open_spare).
local function drop_spare_ring(spare)
    local head = spare.header
    local path = journalfile.ring_of(head)
    if spare.ring then
        spare.ring:close(true)
        spare.ring = nil
    elseif path then
        journalring.remove(path)
    end
    head.ring[0] = 0
end
_M.drop_spare_ring = drop_spare_ring

-- The spare `name` in `dir` (spooldir.list) of a worker that has gone,
-- without its ring, to be this worker's (create); nil otherwise, and an
-- error if it cannot be read.
function _M.open_spare(dir, name)
    local spare, err = journalfile.open_spare(dir, name)
    if spare then
        drop_spare_ring(spare)
    end
    return spare, err
end

-- Removes the spare `spare` (open_spare's), its ring too.
function _M.remove_spare(spare)
    drop_spare_ring(spare)
    journalfile.remove_spare(spare)
end

-- Marks the journal done and removes it, and its ring: every entry and
-- count has been sent.
function Journal:remove()
    if self.ring then
        self.ring:close(true)
        self.ring = nil
    end
    journalfile.methods.remove(self)
end

-- Ends the open entry: its slot gets its size and clicks. The next click
-- opens another.
function Journal:close_entry()
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
function Journal:open_entry(need)
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
