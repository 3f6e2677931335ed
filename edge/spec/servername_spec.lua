package.path = "./?.lua;" .. package.path
local servername = require("slingshot.servername")

describe("servername.file_name", function()
    it("is the server name in lower case without a trailing dot", function()
        assert.equal("go.example.com", servername.file_name("Go.Example.COM."))
        assert.equal("xn--bcher-kva.example", servername.file_name("xn--bcher-kva.example"))
    end)

    it("refuses names that could reach another file", function()
        for _, name in ipairs({ "../default", "a/b", "a..b", ".hidden", "default", "", "a b",
                "x\0y", string.rep("a", 255) }) do
            assert.is_nil(servername.file_name(name), name)
        end
        assert.is_nil(servername.file_name(nil))
    end)
end)
