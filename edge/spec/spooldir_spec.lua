package.path = "./?.lua;" .. package.path
local ffi = require("ffi")
local journals = require("slingshot.journal")
local spooldir = require("slingshot.spooldir")
local spool = require("spec.spool")

pcall(ffi.cdef, "int fork(void);")
pcall(ffi.cdef, "int waitpid(int pid, int *status, int options);")
pcall(ffi.cdef, "void _exit(int status);")

local dir

describe("click spool folder", function()
    spool.per_test(before_each, after_each, function(made)
        dir = made
    end)

    it("removes a journal left half made, not one still being made", function()
        local path = dir .. "/.00000000000000dd.journal.new"
        local fd = ffi.C.open(path, 64 + 2, 384)
        assert.equal(0, ffi.C.flock(fd, 6))
        local unfinished = select(2, spooldir.list(dir))
        assert.same({ ".00000000000000dd.journal.new" }, unfinished)
        spooldir.remove_unfinished(dir, unfinished)
        assert.is_true(spool.exists(path))
        ffi.C.close(fd)  -- its worker died
        spooldir.remove_unfinished(dir, unfinished)
        assert.is_false(spool.exists(path))
    end)

    it("keeps a journal being made the moment before its worker locks it", function()
        local path = dir .. "/.00000000000000de.journal.new"
        local spool_fd = ffi.C.open(dir, 0, 0)
        assert.equal(0, ffi.C.flock(spool_fd, 1))  -- as create holds it
        ffi.C.close(ffi.C.open(path, 64 + 2, 384))
        local unfinished = select(2, spooldir.list(dir))
        spooldir.remove_unfinished(dir, unfinished)
        assert.is_true(spool.exists(path))
        ffi.C.close(spool_fd)  -- its worker died before locking it
        spooldir.remove_unfinished(dir, unfinished)
        assert.is_false(spool.exists(path))
    end)

    it("is made whole while another worker removes journals left half made", function()
        -- One process makes journals as fast as it can; this one scans for
        -- half-made ones and removes them meanwhile, as clickspool.lua does.
        local made = 3000
        local pid = ffi.C.fork()
        if pid == 0 then
            local failures = 0
            for i = 1, made do
                local journal = journals.create(dir, string.format("%016x", i), 100, 65536, 4096)
                if journal then
                    journal:remove()
                else
                    failures = failures + 1
                end
            end
            ffi.C._exit(math.min(failures, 255))
        end
        local status, seen = ffi.new("int[1]"), 0
        while ffi.C.waitpid(pid, status, 1) == 0 do
            local unfinished = select(2, spooldir.list(dir))
            seen = seen + #unfinished
            spooldir.remove_unfinished(dir, unfinished)
        end
        assert.equal(0, status[0] % 256)
        assert.equal(0, bit.rshift(status[0], 8))  -- journals it could not make
        assert.is_true(seen > 0, "the scans never saw a journal being made")
        assert.same({}, (spooldir.list(dir)))
    end)
end)
