package.path = "./?.lua;" .. package.path
local clickbuf = require("slingshot.clickbuf")

describe("clickbuf", function()
    it("makes the 16-hex-digit id prefix from random bytes", function()
        assert.equal("0001feff61626364", clickbuf.hex_prefix("\0\1\254\255abcd"))
    end)
end)
