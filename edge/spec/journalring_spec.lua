package.path = "./?.lua;" .. package.path
local ffi = require("ffi")
local journalring = require("slingshot.journalring")
local spool = require("spec.spool")

local dir

describe("journalring", function()
    spool.per_test(before_each, after_each, function(d) dir = d end)

    it("runs on past its end into its start, and keeps what it holds for the next", function()
        local ring = assert(journalring.create(dir .. "/r.ring", 8192))
        ffi.copy(ring:at(8192 * 3 + 8190), "abcdef", 6)  -- three times round, across the end
        assert.equal("ab", ffi.string(ring:at(8190), 2))
        assert.equal("cdef", ffi.string(ring:at(0), 4))
        assert.equal("abcdef", ffi.string(ring:at(8190), 6))
        ring:close()  -- its writer goes: the file keeps what it held
        local again = assert(journalring.open(dir .. "/r.ring", 8192))
        assert.equal("abcdef", ffi.string(again:at(8190), 6))
        again:close(true)
        assert.is_false(spool.exists(dir .. "/r.ring"))
    end)

    it("is not made over another, and a ring that is gone opens as nothing", function()
        local ring = assert(journalring.create(dir .. "/r.ring", 4096))
        local none, err = journalring.create(dir .. "/r.ring", 4096)
        assert.is_nil(none)
        assert.matches("File exists", err)
        ring:close(true)
        assert.same({}, { journalring.open(dir .. "/r.ring", 4096) })
        local _, open_err = journalring.open(dir .. "/no-such-folder/r.ring", 4096)
        assert.is_nil(open_err)
    end)
end)
