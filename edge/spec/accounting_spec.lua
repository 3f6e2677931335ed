package.path = "./?.lua;" .. package.path
local accounting = require("slingshot.accounting")

describe("accounting", function()
    it("counts clicks per UTC hour and kind", function()
        local tally = {}
        assert.is_true(accounting.add(tally, "redirect", 7200.5))
        assert.is_false(accounting.add(tally, "redirect", 10799.999))
        assert.is_false(accounting.add(tally, "orphan", 7200))
        assert.is_true(accounting.add(tally, "redirect", 10800))
        assert.same({ redirect = 2, orphan = 1 }, tally[7200])
        assert.same({ redirect = 1, orphan = 0 }, tally[10800])
    end)

    it("sends one increment per hour and kind with clicks", function()
        local tally = {}
        accounting.add(tally, "redirect", 3600)
        accounting.add(tally, "redirect", 3601)
        local commands = accounting.commands(tally)
        assert.same({ { "slingshot:served:3600", "redirect", 2 } }, commands)
        assert.equal("slingshot:served:0", accounting.key(0))
    end)
end)
