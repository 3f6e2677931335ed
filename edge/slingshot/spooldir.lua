-- The click spool folder (EDGE_CLICK_SPOOL_DIR), which holds the workers'
-- click journals (journal.lua, journalfile.lua): made for nginx's
-- workers, its journals listed, and those left half made by a worker that
-- died making one removed. A worker holds the spool's own lock (flock on
-- the folder) shared while a journal of its has its temporary name
-- (hold), and one that removes journals left half made holds it alone.
-- Pure LuaJIT FFI over libc, no ngx, so busted tests it directly.
local ffi = require("ffi")

local C = ffi.C
local ffi_string = ffi.string
local ffi_errno = ffi.errno
local find = string.find
local tonumber = tonumber
local ipairs = ipairs
local pcall = pcall

local _M = { _VERSION = "0.1.0" }

ffi.cdef([[
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
]])

-- libc's functions, each declared unless another module has done so.
for _, declaration in ipairs({
    "int open(const char *path, int flags, int mode);",
    "int close(int fd);",
    "int flock(int fd, int operation);",
    "int unlink(const char *path);",
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

local O_RDONLY, O_RDWR, O_CLOEXEC = 0, 2, 0x80000
local LOCK_SH, LOCK_EX, LOCK_NB = 1, 2, 4
local EINTR, EEXIST = 4, 17

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

-- The journal files in `dir`, by name, the names of files left half
-- made (their clicks: none), and those of spares (journalfile.lua: files
-- all sent, kept for the next journals).
function _M.list(dir)
    local found, unfinished, spares = {}, {}, {}
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
        elseif find(name, "^%x+%.spare$") then
            spares[#spares + 1] = name
        end
    end
    C.slingshot_closedir(handle)
    return found, unfinished, spares
end

-- The spool's own lock, taken `how`: its fd, to close to let go of it, or
-- nil (and an error) if not taken.
local function lock(dir, how)
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

-- The spool's lock held shared, while a journal is made under its
-- temporary name: an fd to close once it has its own, or nil and an error.
function _M.hold(dir)
    return lock(dir, LOCK_SH)
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
    local spool = lock(dir, LOCK_EX + LOCK_NB)
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

return _M
