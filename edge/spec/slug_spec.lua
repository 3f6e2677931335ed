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

    it("honours configured lengths and alphabet", function()
        assert.is_nil(slug.from_path("/abcd", 1, 3))
        assert.equal("abc", slug.from_path("/abc", 1, 3))
        assert.is_nil(slug.from_path("/ab", 3, 5))
        local lower = assert(slug.alphabet("a-z.~"))
        assert.equal("a.b~c", slug.from_path("/a.b~c", 1, 64, lower))
        assert.is_nil(slug.from_path("/aBc", 1, 64, lower))
        assert.is_nil(slug.from_path("/a-c", 1, 64, lower))
    end)
end)

describe("slug.from_bytes", function()
    local ffi = require("ffi")

    it("reads the n bytes at a pointer, and no more", function()
        local path = ffi.new("char[?]", 8)
        ffi.copy(path, "/abc/xy")
        assert.equal("abc", slug.from_bytes(path, 4))
        assert.is_nil(slug.from_bytes(path, 7))
        assert.is_nil(slug.from_bytes(path, 1))
    end)

    it("refuses a byte past 127, as from_path does", function()
        local path = ffi.new("char[?]", 6)
        ffi.copy(path, "/caf\195\169")
        assert.is_nil(slug.from_bytes(path, 6))
        assert.equal("caf", slug.from_bytes(path, 4))
    end)
end)

describe("slug.alphabet", function()
    local function allowed(set)
        local chars = {}
        for b = 0, 255 do
            if set[b] then chars[#chars + 1] = string.char(b) end
        end
        return table.concat(chars)
    end

    it("turns characters and ranges into the set of bytes allowed", function()
        assert.equal("-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz",
            allowed(slug.alphabet("A-Za-z0-9_-")))
        assert.equal("-a", allowed(slug.alphabet("-a")))
        assert.equal("-.3456z", allowed(slug.alphabet("3-6.-z")))
    end)

    it("refuses alphabets a path cannot carry", function()
        local refused = { "", "a/b", "a%", "a b", "a?", "z-a", "caf\195\169", 'a"', "a\\" }
        for _, spec in ipairs(refused) do
            local pattern, err = slug.alphabet(spec)
            assert.is_nil(pattern, spec)
            assert.is_string(err)
        end
    end)
end)

describe("slug.from_pixel_path", function()
    it("takes the slug of /<slug>/track", function()
        assert.equal("abc", slug.from_pixel_path("/abc/track"))
        assert.equal("a", slug.from_pixel_path("/a/track", 1, 3))
    end)

    it("refuses every other path", function()
        for _, path in ipairs({ "/track", "//track", "/abc/tracks", "/abc/track/", "/a/b/track",
                "/abc", "/abc.d/track", "/abcd/track" }) do
            assert.is_nil(slug.from_pixel_path(path, 1, 3), path)
        end
    end)
end)
