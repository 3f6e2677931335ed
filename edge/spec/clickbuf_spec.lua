package.path = "./?.lua;" .. package.path
local cjson = require("cjson")
local clickbuf = require("slingshot.clickbuf")

describe("clickbuf", function()
    it("makes 32-hex-digit ids from a prefix and a counter", function()
        local prefix = clickbuf.hex_prefix("\0\1\254\255abcd")
        assert.equal("0001feff61626364", prefix)
        assert.equal(prefix .. "0000000000000001", clickbuf.click_id(prefix, 1))
        assert.equal(prefix .. "0000000100000000", clickbuf.click_id(prefix, 2 ^ 32))
        assert.equal(prefix .. "001fffffffffffff", clickbuf.click_id(prefix, 2 ^ 53 - 1))
    end)

    it("splits clicks into entries of at most per_entry", function()
        local clicks = {}
        for i = 1, 7 do clicks[i] = { id = tostring(i) } end
        local payloads = clickbuf.payloads(clicks, 7, 3)
        assert.equal(3, #payloads)
        local seen = {}
        for _, payload in ipairs(payloads) do
            for _, click in ipairs(cjson.decode(payload)) do seen[#seen + 1] = click.id end
        end
        assert.same({ "1", "2", "3", "4", "5", "6", "7" }, seen)
        assert.equal(2, #clickbuf.payloads(clicks, 4, 3))
    end)
end)
