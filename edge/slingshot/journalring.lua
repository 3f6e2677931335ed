-- The memory a worker writes its clicks into: a file of `size` bytes in
-- the click memory folder (EDGE_CLICK_MEMORY_DIR, a tmpfs such as
-- /dev/shm), used as a ring and mapped twice, back to back, so that the
-- `size` bytes from any point of it lie in one run of addresses. A file in
-- memory outlives the worker that writes it, as the journal's file does,
-- but a store into a page of it that is already mapped costs no page
-- fault: the pages of a file on disk are mapped again, allocated and
-- zeroed as the journal grows, and write-protected after each sync,
-- about 3.5 µs a page. The journal (journal.lua) copies what the ring
-- holds into its file before the ring comes round to it again.
-- Pure LuaJIT FFI over libc, no ngx, so busted tests it directly.
local ffi = require("ffi")

local C = ffi.C
local ffi_cast = ffi.cast
local ffi_string = ffi.string
local ffi_errno = ffi.errno
local tonumber = tonumber
local ipairs = ipairs
local pcall = pcall
local setmetatable = setmetatable

local _M = { _VERSION = "0.1.0" }

-- libc's functions, each declared unless another module has done so.
for _, declaration in ipairs({
    "int open(const char *path, int flags, int mode);",
    "int close(int fd);",
    "int posix_fallocate(int fd, int64_t offset, int64_t len);",
    "void *mmap(void *addr, size_t length, int prot, int flags, int fd, int64_t offset);",
    "int munmap(void *addr, size_t length);",
    "int unlink(const char *path);",
    "char *strerror(int errnum);",
}) do
    pcall(ffi.cdef, declaration)
end

local O_RDWR, O_CREAT, O_EXCL, O_CLOEXEC = 2, 64, 128, 0x80000
local PROT_NONE, PROT_RW = 0, 3
local MAP_SHARED, MAP_PRIVATE, MAP_FIXED, MAP_ANONYMOUS = 1, 2, 0x10, 0x20
local MAP_FAILED = ffi_cast("void *", -1)

local function failed(what, errno)
    return nil, what .. ": " .. ffi_string(C.strerror(errno or ffi_errno()))
end

-- Maps the `size` bytes of `fd` twice, back to back: the address of the
-- first, or nil and an error.
local function map_twice(fd, size, path)
    local at = C.mmap(nil, 2 * size, PROT_NONE, MAP_PRIVATE + MAP_ANONYMOUS, -1, 0)
    if at == MAP_FAILED then
        return failed("click memory " .. path .. ": mmap")
    end
    local base = ffi_cast("uint8_t *", at)
    for half = 0, 1 do
        local got = C.mmap(base + half * size, size, PROT_RW, MAP_SHARED + MAP_FIXED, fd, 0)
        if got == MAP_FAILED then
            local _, err = failed("click memory " .. path .. ": mmap")
            C.munmap(base, 2 * size)
            return nil, err
        end
    end
    return base
end

local Ring = {}
Ring.__index = Ring

local function opened(path, fd, size)
    local base, err = map_twice(fd, size, path)
    C.close(fd)  -- the mappings hold the file
    if not base then
        return nil, err
    end
    return setmetatable({ path = path, size = size, base = base }, Ring)
end

-- A new ring of `size` bytes (a multiple of the page size) at `path`, its
-- memory reserved (a store into a page tmpfs has no room for would kill
-- the worker): the ring, or nil and an error.
function _M.create(path, size)
    local fd = C.open(path, O_RDWR + O_CREAT + O_EXCL + O_CLOEXEC, tonumber("600", 8))
    if fd < 0 then
        return failed("click memory " .. path)
    end
    local rc = C.posix_fallocate(fd, 0, size)
    if rc ~= 0 then
        C.close(fd)
        C.unlink(path)
        return failed("click memory " .. path .. ": posix_fallocate", rc)
    end
    local ring, err = opened(path, fd, size)
    if not ring then
        C.unlink(path)
    end
    return ring, err
end

-- The ring of `size` bytes at `path` that a worker that has gone wrote:
-- the ring, or nil (and an error unless there is no such file).
function _M.open(path, size)
    local fd = C.open(path, O_RDWR + O_CLOEXEC, 0)
    if fd < 0 then
        if ffi_errno() == 2 then
            return nil
        end
        return failed("click memory " .. path)
    end
    return opened(path, fd, size)
end

-- Deletes the ring at `path`, if it is there.
function _M.remove(path)
    C.unlink(path)
end

-- The address of byte `offset` of what the ring holds, counted from its
-- start however many times round: `size` bytes on from it are in a row.
function Ring:at(offset)
    return self.base + offset % self.size
end

-- Lets go of the ring's memory; `remove` also deletes its file.
function Ring:close(remove)
    if self.base then
        C.munmap(self.base, 2 * self.size)
        self.base = nil
    end
    if remove then
        C.unlink(self.path)
    end
end

return _M
