package.path = "./?.lua;" .. package.path
local accounting = require("slingshot.accounting")

describe("accounting", function()
    it("sends each hour's counts of a journal as they stand, a field per kind", function()
        local prefix = "00000000000000aa"
        local commands = accounting.commands(prefix, { { 3600, 2, 0 }, { 7200, 5, 1 } })
        assert.same({
            { "slingshot:served:3600", prefix .. ":redirect", 2, prefix .. ":orphan", 0 },
            { "slingshot:served:7200", prefix .. ":redirect", 5, prefix .. ":orphan", 1 },
        }, commands)
        assert.equal("slingshot:served:0", accounting.key(0))
    end)
end)
