package.path = "./?.lua;" .. package.path
local cidr = require("slingshot.cidr")

describe("cidr", function()
    it("reads IPv4 and IPv6 addresses", function()
        assert.equal("\127\0\0\1", cidr.address("127.0.0.1"))
        assert.equal(string.rep("\0", 15) .. "\1", cidr.address("::1"))
        assert.equal("\32\1\13\184" .. string.rep("\0", 11) .. "\1", cidr.address("2001:db8::1"))
        assert.equal("\10\0\0\1", cidr.address("::ffff:10.0.0.1"))
        local bad_ones = { "256.0.0.1", "1.2.3", "::1::", "1:2:3:4:5:6:7:8:9", "g::1", "", "x" }
        for _, bad in ipairs(bad_ones) do
            assert.is_nil(cidr.address(bad), bad)
        end
    end)

    it("matches ranges, including prefixes that end inside a byte", function()
        local ranges = assert(cidr.parse_list("10.0.0.0/8, 192.168.4.0/22,::1,2001:db8::/33"))
        assert.is_true(cidr.contains(ranges, "10.200.3.4"))
        assert.is_true(cidr.contains(ranges, "192.168.7.255"))
        assert.is_false(cidr.contains(ranges, "192.168.8.0"))
        assert.is_true(cidr.contains(ranges, "::1"))
        assert.is_false(cidr.contains(ranges, "::2"))
        assert.is_true(cidr.contains(ranges, "2001:db8:7fff::9"))
        assert.is_false(cidr.contains(ranges, "2001:db8:8000::9"))
        assert.is_false(cidr.contains(ranges, "11.0.0.1"))
        assert.is_false(cidr.contains(ranges, "unix:"))
        assert.is_true(cidr.contains(assert(cidr.parse_list("0.0.0.0/0")), "8.8.8.8"))
        assert.same({}, cidr.parse_list(""))
    end)

    it("refuses what it cannot read", function()
        assert.is_nil(cidr.parse_list("10.0.0.0/33"))
        local ranges, err = cidr.parse_list("10.0.0.0/8,nonsense")
        assert.is_nil(ranges)
        assert.equal("not an address or CIDR range: nonsense", err)
    end)
end)
