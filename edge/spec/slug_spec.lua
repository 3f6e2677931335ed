package.path = "./?.lua;" .. package.path
local slug = require("slingshot.slug")

describe("slug.from_path", function()
    it("accepts the slug alphabet", function()
        assert.equal("abc", slug.from_path("/abc"))
        assert.equal("A-b_9", slug.from_path("/A-b_9"))
        assert.equal(string.rep("x", 64), slug.from_path("/" .. string.rep("x", 64)))
    end)

    it("refuses everything else", function()
        for _, path in ipairs({ "/", "", "/a/b", "/a.b", "/a b", "/a%20", "/\0", "/\r\n",
                "/caf\195\169", "/" .. string.rep("x", 65) }) do
            assert.is_nil(slug.from_path(path), path)
        end
    end)

    it("honours a configured maximum length", function()
        assert.is_nil(slug.from_path("/abcd", 3))
        assert.equal("abc", slug.from_path("/abc", 3))
    end)
end)
