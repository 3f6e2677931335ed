-- A worker's click journal: the clicks it records, in a file of the spool
-- folder (EDGE_CLICK_SPOOL_DIR) that the worker maps into its memory, as
-- the stream's entries carry them (docs/contract.md, record format 5), and
-- per UTC hour how many it counted (accounting.lua). A click is written
-- into the mapping, that is into the kernel's page cache: a store as cheap
-- as one into the worker's own memory, which outlives the worker. The
-- timer sends the entries in order and notes how far it got; a worker that
-- dies leaves its journal behind, and a sibling or its successor takes it
-- over (adopt) and sends the rest. Pure LuaJIT FFI over libc, no ngx, so
-- busted tests it directly.
--
-- The file: a header (HEADER_SIZE bytes), then entries back to back, each
-- a slot (the entry's bytes and clicks, written when the entry is closed;
-- zero while it is open) and the entry's `clicks` field:
--   <id prefix>\n<first click's number, hex>\n<each click's seven lines>
-- The header's `committed` is the end of the last whole click, moved after
-- each click is written, so a reader never sees half a click; `sent` is
-- where the stream's copy ends. Only the worker holding the file's lock
-- (flock, released by the kernel when its process ends, however it ends)
-- writes to it.
--
-- A click's count (per UTC hour, what the accounting holds as served) is
-- made just before its commit, once `pending_*` say which count it raises
-- to what and where the click will end: a worker killed between the two
-- leaves a count its journal's taker can tell from one whose click is in,
-- and take back (adopt). They come after the hours, so a journal of an
-- older edge has zeros there, which say nothing is pending.
local ffi = require("ffi")

local C = ffi.C
local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local ffi_string = ffi.string
local ffi_errno = ffi.errno
local format = string.format
local find = string.find
local sub = string.sub
local floor = math.floor
local ceil = math.ceil
local max = math.max
local min = math.min
local tonumber = tonumber
local setmetatable = setmetatable
local ipairs = ipairs
local pcall = pcall
local select = select

local _M = { _VERSION = "0.1.0" }

_M.HOUR = 3600
-- A slot per hour, by hour number: ten days, more than the served hashes live.
_M.HOUR_SLOTS = 240
_M.HEADER_SIZE = 8192
-- How much of its journal a worker maps at a time unless told: the memory
-- it writes clicks into. What Redis has not taken yet stays in the file
-- beyond it.
_M.WINDOW = 8 * 1024 * 1024
-- The most an entry can take from the file to read at once.
_M.READ_SIZE = 4 * 1024 * 1024
_M.SUFFIX = ".journal"
-- Kinds of counts, as accounting.lua names them.
_M.REDIRECT, _M.ORPHAN = 1, 2

local MAGIC = "SLJRNL1\n"
local SLOT = 8
local PAGE = 4096
local LF = 10

ffi.cdef(format([[
typedef struct {
    char magic[8];
    char prefix[16];
    double committed;
    double clicks;
    double sent;
    double sent_clicks;
    double finished;
    double hours[%d][3];
    double pending_pos;
    double pending_index;
    double pending_count;
} slingshot_journal_header_t;
typedef struct { uint32_t bytes; uint32_t clicks; } slingshot_journal_slot_t;
typedef struct {
    uint64_t d_ino;
    int64_t d_off;
    uint16_t d_reclen;
    uint8_t d_type;
    char d_name[256];
} slingshot_dirent_t;
typedef struct slingshot_dir slingshot_dir_t;
typedef struct {
    char *pw_name;
    char *pw_passwd;
    uint32_t pw_uid;
    uint32_t pw_gid;
} slingshot_passwd_t;
]], _M.HOUR_SLOTS))

-- libc's functions, each declared unless another module has done so.
for _, declaration in ipairs({
    "int open(const char *path, int flags, int mode);",
    "int close(int fd);",
    "int flock(int fd, int operation);",
    "int posix_fallocate(int fd, int64_t offset, int64_t len);",
    "void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset);",
    "int munmap(void *addr, size_t length);",
    "int64_t pread(int fd, void *buf, size_t count, int64_t offset);",
    "int fdatasync(int fd);",
    "int unlink(const char *path);",
    "int rename(const char *old, const char *new);",
    "int mkdir(const char *path, uint32_t mode);",
    "int chown(const char *path, uint32_t owner, uint32_t group);",
    "uint32_t getuid(void);",
    "char *strerror(int errnum);",
}) do
    pcall(ffi.cdef, declaration)
end
-- Under names of their own: their types are this module's.
ffi.cdef([[
slingshot_dir_t *slingshot_opendir(const char *name) asm("opendir");
slingshot_dirent_t *slingshot_readdir(slingshot_dir_t *dir) asm("readdir");
int slingshot_closedir(slingshot_dir_t *dir) asm("closedir");
slingshot_passwd_t *slingshot_getpwnam(const char *name) asm("getpwnam");
]])

local O_RDONLY, O_RDWR, O_CREAT, O_EXCL, O_CLOEXEC = 0, 2, 64, 128, 0x80000
local PROT_RW, MAP_SHARED = 3, 1
local LOCK_SH, LOCK_EX, LOCK_NB = 1, 2, 4
local EINTR, EEXIST = 4, 17
local MAP_FAILED = ffi_cast("void *", -1)
local header_ptr = ffi.typeof("slingshot_journal_header_t *")
local slot_ptr = ffi.typeof("slingshot_journal_slot_t *")
local bytes = ffi.typeof("uint8_t[?]")

local function failed(what, errno)
    return nil, what .. ": " .. ffi_string(C.strerror(errno or ffi_errno()))
end

-- Makes `dir` (its parent must exist), for nginx's workers: when the master
-- runs as root they run as `user`, and the folder becomes theirs alone.
function _M.prepare_dir(dir, user)
    if C.mkdir(dir, tonumber("700", 8)) ~= 0 and ffi_errno() ~= EEXIST then
        return failed("click spool " .. dir)
    end
    if C.getuid() == 0 then
        local entry = C.slingshot_getpwnam(user)
        if entry == nil then
            return nil, "click spool: no user " .. user .. " to give " .. dir .. " to"
        end
        if C.chown(dir, entry.pw_uid, 0xffffffff) ~= 0 then
            return failed("click spool: chown " .. dir)
        end
    end
    return true
end

-- The journal files in `dir`, by name, and the names of files left half
-- made (their clicks: none).
function _M.list(dir)
    local found, unfinished = {}, {}
    local handle = C.slingshot_opendir(dir)
    if handle == nil then
        return failed("click spool " .. dir)
    end
    while true do
        local entry = C.slingshot_readdir(handle)
        if entry == nil then
            break
        end
        local name = ffi_string(entry.d_name)
        if find(name, "^%x+%.journal$") then
            found[#found + 1] = name
        elseif find(name, "^%.%x+%.journal%.new$") then
            unfinished[#unfinished + 1] = name
        end
    end
    C.slingshot_closedir(handle)
    return found, unfinished
end

local Journal = {}
Journal.__index = Journal

local function map(fd, size, offset)
    local at = C.mmap(nil, size, PROT_RW, MAP_SHARED, fd, offset)
    if at == MAP_FAILED then
        return failed("mmap")
    end
    return ffi_cast("uint8_t *", at)
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

-- The spool's own lock (flock on the folder), taken `how`: a worker holds
-- it shared while a journal of its has its temporary name, and one that
-- removes journals left half made holds it alone. Nil if not taken.
local function lock_spool(dir, how)
    local fd = C.open(dir, O_RDONLY + O_CLOEXEC, 0)
    if fd < 0 then
        return failed("click spool " .. dir)
    end
    while C.flock(fd, how) ~= 0 do
        if ffi_errno() ~= EINTR then
            local _, err = failed("flock " .. dir)
            C.close(fd)
            return nil, err
        end
    end
    return fd
end

-- The file of a new journal `name` in `dir`, locked, its header mapped and
-- written, `window` bytes after it reserved: made under another name and
-- renamed when ready, so that no other worker takes it for a journal left
-- behind. Its fd and header, or nil and an error.
local function make(dir, name, prefix, window)
    local making = dir .. "/." .. name .. ".new"
    local fd = C.open(making, O_RDWR + O_CREAT + O_EXCL + O_CLOEXEC, tonumber("600", 8))
    if fd < 0 then
        return failed("click journal " .. making)
    end
    local ok, err = true, nil
    if C.flock(fd, LOCK_EX + LOCK_NB) ~= 0 then
        ok, err = failed("flock " .. making)
    end
    local rc = ok and C.posix_fallocate(fd, 0, _M.HEADER_SIZE + window)
    if ok and rc ~= 0 then
        ok, err = failed("posix_fallocate " .. making, rc)
    end
    local at
    if ok then
        at, err = map(fd, _M.HEADER_SIZE, 0)
    end
    if not at then
        C.close(fd)
        C.unlink(making)
        return nil, err
    end
    local head = ffi_cast(header_ptr, at)
    ffi_copy(head.magic, MAGIC, 8)
    ffi_copy(head.prefix, prefix, 16)
    head.committed, head.sent = _M.HEADER_SIZE, _M.HEADER_SIZE
    if C.rename(making, dir .. "/" .. name) ~= 0 then
        err = select(2, failed("rename " .. making))
        C.munmap(at, _M.HEADER_SIZE)
        C.close(fd)
        C.unlink(making)
        return nil, err
    end
    return fd, head
end

-- A new journal in `dir` for clicks with the id prefix `prefix` (16 hex
-- digits), locked by this process, at most `max_bytes` of entries, at most
-- `per_entry` clicks an entry, mapped `window` bytes at a time (WINDOW if
-- nil).
function _M.create(dir, prefix, per_entry, max_bytes, window)
    local name = prefix .. _M.SUFFIX
    window = max(PAGE, floor(min(window or _M.WINDOW, max_bytes) / PAGE) * PAGE)
    local spool, err = lock_spool(dir, LOCK_SH)
    if not spool then
        return nil, err
    end
    local fd, head = make(dir, name, prefix, window)
    C.close(spool)
    if not fd then
        return nil, head
    end
    local journal = opened(dir, name, fd, head)
    journal.size = _M.HEADER_SIZE + window
    journal.window = window
    journal.max_bytes = max_bytes
    journal.per_entry = per_entry
    journal.map, journal.base, journal.window_end = nil, 0, 0
    journal.pos = _M.HEADER_SIZE
    journal.entry_at = nil
    journal.in_entry = per_entry  -- per_entry: the next click opens an entry
    journal.seq = 0
    local mapped
    mapped, err = journal:remap(0)
    if not mapped then
        journal:remove()
        return nil, err
    end
    return journal
end

-- The journal `name` in `dir` if the worker that wrote it has gone (its
-- lock is free) and no other worker has taken it over: nil otherwise, and
-- an error if it cannot be read.
function _M.adopt(dir, name)
    local path = dir .. "/" .. name
    local fd = C.open(path, O_RDWR + O_CLOEXEC, 0)
    if fd < 0 then
        return nil  -- finished and removed meanwhile
    end
    if C.flock(fd, LOCK_EX + LOCK_NB) ~= 0 then
        C.close(fd)
        return nil  -- its worker writes it, or another one has taken it over
    end
    local at, err = map(fd, _M.HEADER_SIZE, 0)
    if not at then
        C.close(fd)
        return nil, "click journal " .. path .. ": " .. err
    end
    local head = ffi_cast(header_ptr, at)
    if ffi_string(head.magic, 8) ~= MAGIC then
        C.munmap(at, _M.HEADER_SIZE)
        C.close(fd)
        return nil, "click journal " .. path .. " is not one"
    end
    if head.finished ~= 0 then
        C.munmap(at, _M.HEADER_SIZE)
        C.close(fd)
        return nil  -- sent in full by the worker that had taken it over
    end
    if head.pending_pos > head.committed then
        -- Its worker was killed adding a click: the click is not in the
        -- journal, so neither is it served. Its count, if made, is undone.
        local index = head.pending_index
        local counts = head.hours[floor(index / 3)]
        local kind = index % 3
        if counts[kind] == head.pending_count then
            counts[kind] = head.pending_count - 1
        end
        head.pending_pos = 0
    end
    return opened(dir, name, fd, head)
end

-- Removes `names`, journals left half made in `dir` by workers that died
-- making them (they hold no click); none while any worker is making one,
-- as its file is not locked yet the moment after it is made. Each is
-- skipped if locked: a worker of an older release, which takes no lock on
-- the spool, may be making it.
function _M.remove_unfinished(dir, names)
    if #names == 0 then
        return
    end
    local spool = lock_spool(dir, LOCK_EX + LOCK_NB)
    if not spool then
        return  -- a worker is making one: the next scan looks again
    end
    for _, name in ipairs(names) do
        local path = dir .. "/" .. name
        local fd = C.open(path, O_RDWR + O_CLOEXEC, 0)
        if fd >= 0 then
            if C.flock(fd, LOCK_EX + LOCK_NB) == 0 then
                C.unlink(path)
            end
            C.close(fd)
        end
    end
    C.close(spool)
end

-- Maps the window of the file that holds offset `pos` and `need` bytes
-- after it, reserving the disk space first (a write into a mapping of
-- space the disk does not have would kill the worker). Nil and an error
-- when the journal would grow past its bound or the disk is full.
function Journal:remap(need)
    local pos = self.pos
    local base = floor(pos / PAGE) * PAGE
    local size = max(self.window, ceil((pos - base + need) / PAGE) * PAGE)
    local stop = base + size
    if stop - _M.HEADER_SIZE > self.max_bytes then
        return nil, "click journal " .. self.path .. " is full (" .. self.max_bytes .. " bytes)"
    end
    if stop > self.size then
        local rc = C.posix_fallocate(self.fd, self.size, stop - self.size)
        if rc ~= 0 then
            return failed("click journal " .. self.path .. ": posix_fallocate", rc)
        end
        self.size = stop
    end
    if self.map then
        C.munmap(self.map, self.window_end - self.base)
        self.map, self.window_end = nil, 0
    end
    local at, err = map(self.fd, size, base)
    if not at then
        return nil, "click journal " .. self.path .. ": " .. err
    end
    self.map, self.base, self.window_end = at, base, stop
    return true
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

-- Appends a click on `slug` served by the link `link_id` (its id as a
-- string of digits; "" for an orphan visit) through `rule` (what
-- rules.pick chose, "" for the link's own url; for an orphan visit its
-- kind and domain), whose details are `len` bytes at `details` (a pointer,
-- or a Lua string), cut already (clickbuf.cut_details), and with `kind`
-- counts it in the UTC hour of `when` (as count does) so that no crash
-- leaves one without the other. Returns its number, or nil and an error
-- when the journal has no room for it (and then counts nothing).
function Journal:add(slug, link_id, rule, details, len, kind, when)
    local slug_len, id_len, rule_len = #slug, #link_id, #rule
    local need = slug_len + id_len + rule_len + len + 4
    if self.in_entry >= self.per_entry or self.pos + need > self.window_end then
        local ok, err = self:open_entry(need)
        if not ok then
            return nil, err
        end
    end
    local pos = self.pos
    local at = self.map + (pos - self.base)
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

-- The counts of the UTC hour of `at` (Unix seconds), and their slot.
function Journal:hour_counts(at)
    local hour = floor(at / _M.HOUR)
    if hour ~= self.hour then
        local hour_slot = hour % _M.HOUR_SLOTS
        local counts = self.header.hours[hour_slot]
        if counts[0] ~= hour then
            counts[0], counts[1], counts[2] = hour, 0, 0
        end
        self.hour, self.counts, self.hour_slot = hour, counts, hour_slot
    end
    return self.counts, self.hour_slot
end

-- Adds one to the count of `kind` (REDIRECT or ORPHAN) in the UTC hour of
-- `at` (Unix seconds): a click served that the journal has no room for.
function Journal:count(kind, at)
    local counts = self:hour_counts(at)
    counts[kind] = counts[kind] + 1
end

-- The counts of every hour since `since` (Unix seconds) that differ from
-- what was last sent: a list of { hour start, redirects, orphan visits }.
function Journal:unsent_counts(since)
    local out = {}
    local hours, sent = self.header.hours, self.sent_counts
    for i = 0, _M.HOUR_SLOTS - 1 do
        local counts = hours[i]
        local start = counts[0] * _M.HOUR
        local redirects, orphans = counts[1], counts[2]
        if start >= since and redirects + orphans > 0 then
            local last = sent[start]
            if not last or last[1] ~= redirects or last[2] ~= orphans then
                out[#out + 1] = { start, redirects, orphans }
            end
        end
    end
    return out
end

-- Notes counts (as unsent_counts gave them) as sent.
function Journal:counts_sent(list)
    local sent = self.sent_counts
    for i = 1, #list do
        local counts = list[i]
        sent[counts[1]] = { counts[2], counts[3] }
    end
end

-- Hour counts kept in this process's memory alone, with a journal's
-- `prefix`, count, unsent_counts and counts_sent: for the clicks a worker
-- served while it had no journal to write them into (clicks.lua).
local Counts = {
    hour_counts = Journal.hour_counts,
    count = Journal.count,
    unsent_counts = Journal.unsent_counts,
    counts_sent = Journal.counts_sent,
}
Counts.__index = Counts
local hours_type = ffi.typeof(format("double[%d][3]", _M.HOUR_SLOTS))

function _M.counts(prefix)
    return setmetatable({
        prefix = prefix, header = { hours = hours_type() },
        hour = -1, counts = nil, hour_slot = nil, sent_counts = {},
    }, Counts)
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
    if self.buffer_size < want then
        self.buffer, self.buffer_size = bytes(want), want
    end
    local buffer = self.buffer
    local got = tonumber(C.pread(self.fd, buffer, want, from))
    if got < 0 then
        return failed("click journal " .. self.path .. ": pread")
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

-- Writes what the file holds to disk.
function Journal:sync()
    if C.fdatasync(self.fd) ~= 0 then
        return failed("click journal " .. self.path .. ": fdatasync")
    end
    return true
end

-- Lets go of the file, leaving it for another worker to take over.
function Journal:close()
    if self.map then
        C.munmap(self.map, self.window_end - self.base)
        self.map = nil
    end
    C.munmap(self.header, _M.HEADER_SIZE)
    C.close(self.fd)
    self.fd = -1
end

-- Renames the journal out of the way (`.broken`), and lets go of it.
function Journal:set_aside()
    C.rename(self.path, self.path .. ".broken")
    self:close()
end

-- Marks the journal done and removes it: every entry and count has been
-- sent. A worker that opened it before cannot take it over after.
function Journal:remove()
    self.header.finished = 1
    C.unlink(self.path)
    self:close()
end

return _M
