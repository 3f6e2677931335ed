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
-- the file, and sends the rest. This module is the journal's life cycle;
-- the writing of clicks and entries is journalwrite.lua's, the file itself
-- (its header, locking, writing, removing) journalfile.lua's, its reading
-- by the timer journalread.lua's, the spool folder spooldir.lua's. Pure
-- LuaJIT FFI over libc, no ngx, so busted tests it directly.
local ffi = require("ffi")
local journalfile = require("slingshot.journalfile")
local journalring = require("slingshot.journalring")
local journalread = require("slingshot.journalread")
local journalwrite = require("slingshot.journalwrite")
local hourcounts = require("slingshot.hourcounts")

local ffi_string = ffi.string
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

local Journal = {}
Journal.__index = Journal
local MIXINS = {
    journalfile.methods, journalread.methods, journalwrite.methods, hourcounts.methods,
}
for _, methods in pairs(MIXINS) do
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

return _M
