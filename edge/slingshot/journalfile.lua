-- The file of a worker's click journal (journal.lua) and its life cycle:
-- a new journal's file made whole in the spool folder (spooldir.lua)
-- before any worker can take it for one left behind, a journal left
-- behind opened by the worker that takes it over, its header mapped into
-- memory, and the file written, synced, set aside, removed, or kept as a
-- spare for the worker's next journal (reuse). Pure LuaJIT FFI over libc,
-- no ngx, so busted tests it directly.
--
-- The file: a header (HEADER_SIZE bytes, `slingshot_journal_header_t`),
-- then entries back to back (journal.lua). Only the worker holding the
-- file's lock (flock, released by the kernel when its process ends,
-- however it ends) writes to it. A writer writes its clicks into a ring in
-- memory (journalring.lua), named in the header, and copies them into the
-- file (`copied`); the header's `durable` is how far a sync has written
-- them to disk, what a journal whose ring went with the machine keeps.
local ffi = require("ffi")
local hourcounts = require("slingshot.hourcounts")
local spooldir = require("slingshot.spooldir")

local C = ffi.C
local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local ffi_fill = ffi.fill
local ffi_string = ffi.string
local ffi_errno = ffi.errno
local format = string.format
local tonumber = tonumber
local ipairs = ipairs
local pcall = pcall
local select = select

local _M = { _VERSION = "0.1.0" }

_M.HEADER_SIZE = 8192
_M.SUFFIX = ".journal"
_M.SPARE_SUFFIX = ".spare"
_M.PAGE = 4096

-- Journals written straight into the file, by an older edge, and those
-- written through a ring.
local MAGIC_FILE, MAGIC = "SLJRNL1\n", "SLJRNL2\n"
local BOOT_ID_SIZE, RING_PATH_SIZE = 40, 512
local HEADER_SIZE = _M.HEADER_SIZE

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
    double copied;
    double copied_clicks;
    double durable;
    double durable_clicks;
    double ring_size;
    char boot[%d];
    char ring[%d];
} slingshot_journal_header_t;
]], hourcounts.HOUR_SLOTS, BOOT_ID_SIZE, RING_PATH_SIZE))
assert(ffi.sizeof("slingshot_journal_header_t") <= HEADER_SIZE)

-- This boot of the machine: a ring in memory written in another is gone.
local function read_boot_id()
    local f = io.open("/proc/sys/kernel/random/boot_id", "rb")
    local id = f and f:read("*l") or ""
    if f then
        f:close()
    end
    return id
end
_M.BOOT_ID = read_boot_id()

-- libc's functions, each declared unless another module has done so.
for _, declaration in ipairs({
    "int open(const char *path, int flags, int mode);",
    "int close(int fd);",
    "int flock(int fd, int operation);",
    "int posix_fallocate(int fd, int64_t offset, int64_t len);",
    "void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset);",
    "int munmap(void *addr, size_t length);",
    "int64_t pread(int fd, void *buf, size_t count, int64_t offset);",
    "int64_t pwrite(int fd, const void *buf, size_t count, int64_t offset);",
    "int fdatasync(int fd);",
    "int fsync(int fd);",
    "int unlink(const char *path);",
    "int rename(const char *old, const char *new);",
    "char *strerror(int errnum);",
}) do
    pcall(ffi.cdef, declaration)
end

local O_RDONLY, O_RDWR, O_CREAT, O_EXCL, O_CLOEXEC = 0, 2, 64, 128, 0x80000
local PROT_RW, MAP_SHARED = 3, 1
local LOCK_EX, LOCK_NB = 2, 4
local MAP_FAILED = ffi_cast("void *", -1)
local header_ptr = ffi.typeof("slingshot_journal_header_t *")

local function failed(what, errno)
    return nil, what .. ": " .. ffi_string(C.strerror(errno or ffi_errno()))
end

local function map(fd, size, offset)
    local at = C.mmap(nil, size, PROT_RW, MAP_SHARED, fd, offset)
    if at == MAP_FAILED then
        return failed("mmap")
    end
    return ffi_cast("uint8_t *", at)
end

-- Writes the header of a new journal for clicks with the id prefix
-- `prefix` at `head`: nothing in it, nothing sent.
local function begin(head, prefix)
    ffi_fill(head, HEADER_SIZE)
    ffi_copy(head.magic, MAGIC, 8)
    ffi_copy(head.prefix, prefix, 16)
    head.committed, head.sent = HEADER_SIZE, HEADER_SIZE
    head.copied, head.durable = HEADER_SIZE, HEADER_SIZE
end

-- The file of a new journal `name` in `dir`, locked, its header mapped and
-- written: made under another name and renamed when ready, so that no
-- other worker takes it for a journal left behind. Its fd and header, or
-- nil and an error.
local function make(dir, name, prefix)
    local making = dir .. "/." .. name .. ".new"
    local fd = C.open(making, O_RDWR + O_CREAT + O_EXCL + O_CLOEXEC, tonumber("600", 8))
    if fd < 0 then
        return failed("click journal " .. making)
    end
    local ok, err = true, nil
    if C.flock(fd, LOCK_EX + LOCK_NB) ~= 0 then
        ok, err = failed("flock " .. making)
    end
    local rc = ok and C.posix_fallocate(fd, 0, HEADER_SIZE)
    if ok and rc ~= 0 then
        ok, err = failed("posix_fallocate " .. making, rc)
    end
    local at
    if ok then
        at, err = map(fd, HEADER_SIZE, 0)
    end
    if not at then
        C.close(fd)
        C.unlink(making)
        return nil, err
    end
    local head = ffi_cast(header_ptr, at)
    begin(head, prefix)
    if C.rename(making, dir .. "/" .. name) ~= 0 then
        err = select(2, failed("rename " .. making))
        C.munmap(at, HEADER_SIZE)
        C.close(fd)
        C.unlink(making)
        return nil, err
    end
    return fd, head
end

-- The file of a new journal `name` in `dir` for clicks with the id prefix
-- `prefix` (16 hex digits), locked by this process: its fd and mapped
-- header, or nil and an error.
function _M.create(dir, name, prefix)
    local spool, err = spooldir.hold(dir)
    if not spool then
        return nil, err
    end
    local fd, head = make(dir, name, prefix)
    C.close(spool)
    return fd, head
end

-- The file of a spare (Methods:make_spare), whose fd, header and path
-- are `spare`'s, made the file of the new journal `name` in `dir` for
-- clicks with the id prefix `prefix`, naming the spare's `ring` if given
-- (so that the file names it throughout, for whoever takes it over): its
-- header written and on disk before it takes the journal's name, and the
-- name on disk before a click is written (a sync of the file no longer
-- grows it, so it would not write the name too). Its fd and header, or
-- nil and an error (the spare is removed).
function _M.reuse(spare, dir, name, prefix, ring)
    local fd, head, path = spare.fd, spare.header, spare.path
    begin(head, prefix)
    local err
    if ring then
        _M.name_ring(head, ring.path, ring.size)
    end
    if C.fdatasync(fd) ~= 0 then
        err = select(2, failed("fdatasync " .. path))
    elseif C.rename(path, dir .. "/" .. name) ~= 0 then
        err = select(2, failed("rename " .. path))
    else
        local folder = C.open(dir, O_RDONLY + O_CLOEXEC, 0)
        if folder < 0 or C.fsync(folder) ~= 0 then
            err = select(2, failed("fsync " .. dir))
        end
        if folder >= 0 then
            C.close(folder)
        end
        if not err then
            return fd, head
        end
        path = dir .. "/" .. name
    end
    C.unlink(path)
    C.munmap(head, HEADER_SIZE)
    C.close(fd)
    return nil, "click journal " .. name .. " from a spare: " .. err
end

-- The file at `path` if no process holds its lock: opened, locked, and its
-- header mapped: its fd and header; nil if it is not there or is locked,
-- and an error if it cannot be mapped.
local function open_free(path)
    local fd = C.open(path, O_RDWR + O_CLOEXEC, 0)
    if fd < 0 then
        return nil
    end
    if C.flock(fd, LOCK_EX + LOCK_NB) ~= 0 then
        C.close(fd)
        return nil
    end
    local at, err = map(fd, HEADER_SIZE, 0)
    if not at then
        C.close(fd)
        return nil, err
    end
    return fd, ffi_cast(header_ptr, at)
end

-- The spare `name` in `dir` (spooldir.list) of a worker that has gone (its
-- lock is free), locked and its header mapped, to be this worker's: a
-- table of its fd, header and path, or nil (and an error if it cannot be
-- mapped, when it is removed).
function _M.open_spare(dir, name)
    local path = dir .. "/" .. name
    local fd, head = open_free(path)
    if not fd then
        if head then
            C.unlink(path)
            return nil, "click journal spare " .. path .. ": " .. head
        end
        return nil  -- taken or removed meanwhile, or its worker keeps it
    end
    return { fd = fd, header = head, path = path }
end

-- Removes the spare `spare` (open_spare's).
function _M.remove_spare(spare)
    C.unlink(spare.path)
    C.munmap(spare.header, HEADER_SIZE)
    C.close(spare.fd)
end

-- Names in the header `head` the ring at `path` (fewer than
-- RING_PATH_SIZE bytes) of `size` bytes, made in this boot of the machine,
-- that its clicks are written through: true, or nil and an error.
function _M.name_ring(head, path, size)
    if #path >= RING_PATH_SIZE then
        return nil, "click memory " .. path .. ": a path of " .. RING_PATH_SIZE .. " bytes or more"
    end
    ffi_fill(head.boot, BOOT_ID_SIZE)
    ffi_copy(head.boot, _M.BOOT_ID, #_M.BOOT_ID)
    head.ring_size = size
    ffi_fill(head.ring, RING_PATH_SIZE)
    ffi_copy(head.ring, path, #path)
    return true
end

-- The file of the journal `name` in `dir`, locked and its header mapped,
-- if the worker that wrote it has gone (its lock is free) and no other
-- worker has taken it over: its fd and header; nil otherwise, and an
-- error if it cannot be read.
function _M.open_left(dir, name)
    local path = dir .. "/" .. name
    local fd, head = open_free(path)
    if not fd then
        -- Finished and removed meanwhile, or its worker writes it, or
        -- another one has taken it over; or it cannot be mapped.
        return nil, head and "click journal " .. path .. ": " .. head
    end
    local magic = ffi_string(head.magic, 8)
    if magic ~= MAGIC and magic ~= MAGIC_FILE then
        C.munmap(head, HEADER_SIZE)
        C.close(fd)
        return nil, "click journal " .. path .. " is not one"
    end
    if head.finished ~= 0 then
        C.munmap(head, HEADER_SIZE)
        C.close(fd)
        return nil  -- sent in full by the worker that had taken it over
    end
    return fd, head
end

-- The ring a journal left behind was written through: its path, and its
-- size if it was made in this boot of the machine (else it is gone); nil
-- if the journal was written straight into its file or its ring has been
-- copied into it.
function _M.ring_of(head)
    if head.ring[0] == 0 then
        return nil
    end
    local path = ffi_string(head.ring)
    if ffi_string(head.boot) ~= _M.BOOT_ID then
        return path, nil
    end
    return path, head.ring_size
end

-- The methods of a journal that deal with its file, given its `fd`,
-- `path` and `header`.
local Methods = {}
_M.methods = Methods

-- Writes the `count` bytes at `from` into the file at `offset`: true, or
-- nil and an error (the disk is full).
function Methods:write(from, count, offset)
    while count > 0 do
        local wrote = tonumber(C.pwrite(self.fd, from, count, offset))
        if wrote <= 0 then
            return failed("click journal " .. self.path .. ": pwrite", wrote == 0 and 28 or nil)
        end
        from, count, offset = from + wrote, count - wrote, offset + wrote
    end
    return true
end

-- Up to `count` bytes of the file from `offset` into `buffer`: how many,
-- or nil and an error.
function Methods:read(buffer, count, offset)
    local got = tonumber(C.pread(self.fd, buffer, count, offset))
    if got < 0 then
        return failed("click journal " .. self.path .. ": pread")
    end
    return got
end

-- Writes what the file holds to disk, and notes in its header how far
-- its entries are there.
function Methods:sync()
    local head = self.header
    local copied, clicks = head.copied, head.copied_clicks
    if C.fdatasync(self.fd) ~= 0 then
        return failed("click journal " .. self.path .. ": fdatasync")
    end
    head.durable, head.durable_clicks = copied, clicks
    return true
end

-- Lets go of the file, leaving it for another worker to take over.
function Methods:close()
    C.munmap(self.header, HEADER_SIZE)
    C.close(self.fd)
    self.fd = -1
end

-- Renames the journal out of the way (`.broken`), and lets go of it.
function Methods:set_aside()
    C.rename(self.path, self.path .. ".broken")
    self:close()
end

-- Makes the journal, every entry and count of it sent, a spare: marked
-- done and renamed out of the spool's journals (spooldir.list), still
-- locked, its file's pages and blocks kept for the next journal (reuse),
-- whose clicks are then copied into pages the kernel has already, not new
-- ones; its ring, still named in its header, is kept for it too
-- (journal.lua's create), whose pages are mapped already. True, or nil
-- and an error (it is as it was).
function Methods:make_spare()
    local spare = self.dir .. "/" .. ffi_string(self.header.prefix, 16) .. _M.SPARE_SUFFIX
    self.header.finished = 1
    if C.rename(self.path, spare) ~= 0 then
        self.header.finished = 0
        return failed("rename " .. self.path)
    end
    self.path = spare
    return true
end

-- Marks the journal done and removes it: every entry and count has been
-- sent. A worker that opened it before cannot take it over after.
function Methods:remove()
    self.header.finished = 1
    C.unlink(self.path)
    self:close()
end

return _M
