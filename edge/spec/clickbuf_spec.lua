package.path = "./?.lua;" .. package.path
local clickbuf = require("slingshot.clickbuf")

-- Splits a payload the way docs/contract.md reads it.
local function parse(payload)
    local lines = {}
    for line in (payload):gmatch("([^\n]*)\n") do
        lines[#lines + 1] = line
    end
    assert.equal(payload, table.concat(lines, "\n") .. "\n")
    local clicks = {}
    for i = 3, #lines, 6 do
        clicks[#clicks + 1] = { slug = lines[i], orphan = lines[i + 1], msec = lines[i + 2],
            ip = lines[i + 3], ua = lines[i + 4], ref = lines[i + 5] }
    end
    assert.equal(0, (#lines - 2) % 6)
    return lines[1], tonumber(lines[2], 16), clicks
end

local function details(ip, ua, ref)
    return "1763800000.123\n" .. ip .. "\n" .. ua .. "\n" .. ref
end

describe("clickbuf", function()
    it("makes the 16-hex-digit id prefix from random bytes", function()
        assert.equal("0001feff61626364", clickbuf.hex_prefix("\0\1\254\255abcd"))
    end)

    it("writes each click's slug, kind and details a line each, as they are", function()
        local tricky = 'say "hi"\\ \1\t","ref":"spoof \255'
        local buffer = { "abc", details("10.0.0.1", "curl/8.0", ""), false,
            "gone", details("::1", tricky, "https://r.example/?a=1"), true }
        local out = clickbuf.payloads("00000000000000aa", 2 ^ 40 + 7, buffer, 2, 100, {})
        assert.equal(1, #out)
        local prefix, first, clicks = parse(out[1])
        assert.equal("00000000000000aa", prefix)
        assert.equal(2 ^ 40 + 7, first)
        assert.same({
            { slug = "abc", orphan = "0", msec = "1763800000.123", ip = "10.0.0.1", ua = "curl/8.0",
              ref = "" },
            { slug = "gone", orphan = "1", msec = "1763800000.123", ip = "::1", ua = tricky,
              ref = "https://r.example/?a=1" },
        }, clicks)
    end)

    it("cuts long headers, and leaves everything else alone", function()
        local chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
            .. "Chrome/131.0.0.0 Safari/537.36"
        for _, case in ipairs({
            { "::1", string.rep("u", 600), string.rep("r", 2000), 512, 1024 },
            { "::1", string.rep("u", 512), string.rep("r", 1024), 512, 1024 },
            { "::1", string.rep("u", 513), "", 512, 0 },
            { "2001:db8::1", "", string.rep("r", 1025), 0, 1024 },
            { "192.0.2.1", chrome, string.rep("r", 900), #chrome, 900 },
            { "::1", string.rep("\226\156\147", 200), "", 512, 0 },
        }) do
            local buffer = { "s", details(case[1], case[2], case[3]), false }
            local payload = clickbuf.payloads("0000000000000000", 1, buffer, 1, 100, {})[1]
            local _, _, clicks = parse(payload)
            local click = clicks[1]
            assert.equal(case[1], click.ip)
            assert.equal(case[4], #click.ua)
            assert.equal(case[5], #click.ref)
            assert.equal(case[2]:sub(1, case[4]), click.ua)
            assert.equal(case[3]:sub(1, case[5]), click.ref)
            assert.equal("1763800000.123", click.msec)
        end
    end)

    it("splits clicks into entries of at most per_entry, numbered from their first", function()
        local buffer = {}
        for i = 1, 7 do
            local at = (i - 1) * clickbuf.FIELDS
            buffer[at + 1], buffer[at + 2], buffer[at + 3] = "s" .. i, details("::1", "", ""), false
        end
        local held = { "an earlier payload" }
        local payloads = clickbuf.payloads("0000000000000000", 41, buffer, 7, 3, held)
        assert.equal(held, payloads)
        assert.equal(4, #payloads)
        assert.equal("an earlier payload", payloads[1])
        local seen, firsts = {}, {}
        for i = 2, 4 do
            local _, first, clicks = parse(payloads[i])
            firsts[#firsts + 1] = first
            for _, click in ipairs(clicks) do seen[#seen + 1] = click.slug end
        end
        assert.same({ 41, 44, 47 }, firsts)
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6", "s7" }, seen)
        assert.equal(2, #clickbuf.payloads("0000000000000000", 1, buffer, 4, 3, {}))
    end)
end)
