package.path = "./?.lua;" .. package.path
local memo = require("slingshot.memo")

describe("memo.of", function()
    it("makes a value once per header, an absent header included", function()
        local calls = 0
        local of = memo.of(function(text)
            calls = calls + 1
            return { text = text }
        end)
        local absent = of(nil)
        assert.is_nil(absent.text)
        assert.equal(absent, of(nil))
        assert.equal(of("a"), of("a"))
        assert.are_not.equal(absent, of(""))
        assert.equal(3, calls)
    end)

    it("works a header longer than TEXT out again each time", function()
        local calls = 0
        local of = memo.of(function()
            calls = calls + 1
            return {}
        end)
        local long = ("x"):rep(memo.TEXT + 1)
        of(long)
        of(long)
        assert.equal(2, calls)
    end)
end)
