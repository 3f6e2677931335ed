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

    local function details(ip, ua, ref)
        return ip .. '","ua":"' .. ua .. '"\n,"ref":"' .. ref
    end

    it("builds contract click objects from the details nginx joins", function()
        local buffer = { 7, "abc", 1763800000123, details("10.0.0.1", "curl/8.0", ""), false,
            8, "gone", 1763800000004, details("::1", "ua", "https://r.example/?a=1"), true }
        assert.same({ id = "00000000000000aa0000000000000007", ts = 1763800000123, slug = "abc",
            ip = "10.0.0.1", ua = "curl/8.0", ref = "" },
            cjson.decode(clickbuf.click_json("00000000000000aa", buffer, 1)))
        assert.same({ id = "00000000000000aa0000000000000008", ts = 1763800000004, slug = "gone",
            ip = "::1", ua = "ua", ref = "https://r.example/?a=1", orphan = true },
            cjson.decode(clickbuf.click_json("00000000000000aa", buffer, 6)))
    end)

    it("cuts long headers", function()
        local long = details("::1", string.rep("u", 600), string.rep("r", 2000))
        local buffer = { 1, "s", 1, long, true }
        local click = cjson.decode(clickbuf.click_json("0000000000000000", buffer, 1))
        assert.equal(string.rep("u", 512), click.ua)
        assert.equal(string.rep("r", 1024), click.ref)
        assert.is_true(click.orphan)
    end)

    it("escapes what JSON needs escaped and keeps the JSON valid UTF-8", function()
        local tricky = 'say "hi"\\ \1\t","ref":"spoof'
        local buffer = { 1, "s", 1500, details("::1", tricky, "caf\195\169 \233t\195"), false }
        local click = cjson.decode(clickbuf.click_json("0000000000000000", buffer, 1))
        assert.equal(tricky, click.ua)
        assert.equal("caf\195\169 \239\191\189t\239\191\189", click.ref)
        assert.equal(1500, click.ts)
    end)

    it("replaces bytes that are not UTF-8", function()
        local bad = "\239\191\189"
        assert.equal("plain", clickbuf.valid_utf8("plain"))
        local fine = "\226\156\147 \240\159\152\128"
        assert.equal(fine, clickbuf.valid_utf8(fine))
        assert.equal("a" .. bad .. "b", clickbuf.valid_utf8("a\255b"))
        assert.equal(bad .. bad, clickbuf.valid_utf8("\192\175"))          -- overlong "/"
        assert.equal(bad .. bad .. bad, clickbuf.valid_utf8("\237\160\128")) -- a surrogate
        assert.equal("x" .. bad .. bad, clickbuf.valid_utf8("x\226\156"))  -- cut short
    end)

    it("splits clicks into entries of at most per_entry", function()
        local buffer = {}
        for i = 1, 7 do
            local at = (i - 1) * clickbuf.FIELDS
            buffer[at + 1], buffer[at + 2], buffer[at + 3] = i, "s" .. i, 1000
            buffer[at + 4], buffer[at + 5] = details("::1", "", ""), false
        end
        local payloads = clickbuf.payloads("0000000000000000", buffer, 7, 3)
        assert.equal(3, #payloads)
        local seen = {}
        for _, payload in ipairs(payloads) do
            for _, click in ipairs(cjson.decode(payload)) do seen[#seen + 1] = click.slug end
        end
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6", "s7" }, seen)
        assert.equal(2, #clickbuf.payloads("0000000000000000", buffer, 4, 3))
    end)
end)
