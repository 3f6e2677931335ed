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
    for i = 3, #lines, 7 do
        clicks[#clicks + 1] = { slug = lines[i], link = lines[i + 1], rule = lines[i + 2],
            msec = lines[i + 3], ip = lines[i + 4], ua = lines[i + 5], ref = lines[i + 6] }
    end
    assert.equal(0, (#lines - 2) % 7)
    return lines[1], tonumber(lines[2], 16), clicks
end

local function details(ip, ua, ref)
    return "1763800000.123\n" .. ip .. "\n" .. ua .. "\n" .. ref
end

-- Adds a click the way clicks.lua does: details cut first if they are long.
local function add(buffer, slug, link_id, text, rule)
    local cut = clickbuf.cut_details(text)
    return buffer:add(slug, link_id, rule or "", cut, #cut)
end

describe("clickbuf", function()
    it("puts another referer in a click's details, whatever the first one was", function()
        assert.equal(details("::1", "UA", "https://news.example/"),
            clickbuf.with_referer(details("::1", "UA", ""), "https://news.example/"))
        assert.equal(details("10.0.0.1", "", ""),
            clickbuf.with_referer(details("10.0.0.1", "", "https://x.example/a\nb"), ""))
    end)

    it("makes the 16-hex-digit id prefix from random bytes", function()
        assert.equal("0001feff61626364", clickbuf.hex_prefix("\0\1\254\255abcd"))
    end)

    it("writes each click's slug, link id, rule and details a line each, as they are", function()
        local tricky = 'say "hi"\\ \1\t","ref":"spoof \255'
        local buffer = clickbuf.new("00000000000000aa", 100)
        assert.equal(1, add(buffer, "abc", "7", details("10.0.0.1", "curl/8.0", ""), "ab10"))
        assert.equal(2, add(buffer, "gone", "", details("::1", tricky, "https://r.example/?a=1")))
        local out, count = buffer:take({})
        assert.equal(1, #out)
        assert.equal(2, count)
        local prefix, first, clicks = parse(out[1])
        assert.equal("00000000000000aa", prefix)
        assert.equal(1, first)
        assert.same({
            { slug = "abc", link = "7", rule = "ab10", msec = "1763800000.123", ip = "10.0.0.1",
              ua = "curl/8.0", ref = "" },
            { slug = "gone", link = "", rule = "", msec = "1763800000.123", ip = "::1", ua = tricky,
              ref = "https://r.example/?a=1" },
        }, clicks)
    end)

    it("writes an orphan visit's kind and domain on the rule's line, even the longest", function()
        local label = "scheduled " .. string.rep("h", 253)
        assert.equal(clickbuf.ORPHAN_LABEL_MAX, #label)
        local long = details("2001:db8::1", string.rep("u", 600), string.rep("r", 2000))
        local buffer = clickbuf.new("00000000000000aa", 100, 4096)
        for _ = 1, 5 do
            add(buffer, string.rep("s", 64), "", long, label)
        end
        local out, count = buffer:take({})
        assert.equal(5, count)
        for i = 1, #out do
            local _, _, clicks = parse(out[i])
            for _, click in ipairs(clicks) do
                assert.equal("", click.link)
                assert.equal(label, click.rule)
            end
        end
    end)

    it("copies details from a pointer to nginx's memory, not only from strings", function()
        local ffi = require("ffi")
        local text = details("192.0.2.7", "Mozilla/5.0", "https://a.example/")
        local bytes = ffi.new("char[?]", #text)
        ffi.copy(bytes, text, #text)
        local buffer = clickbuf.new("0000000000000000", 100)
        buffer:add("s", "123456789", "3", bytes, #text)
        local _, _, clicks = parse(buffer:take({})[1])
        assert.same({ slug = "s", link = "123456789", rule = "3", msec = "1763800000.123",
            ip = "192.0.2.7", ua = "Mozilla/5.0", ref = "https://a.example/" }, clicks[1])
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
            local buffer = clickbuf.new("0000000000000000", 100)
            add(buffer, "s", "1", details(case[1], case[2], case[3]))
            local _, _, clicks = parse(buffer:take({})[1])
            local click = clicks[1]
            assert.equal(case[1], click.ip)
            assert.equal(case[4], #click.ua)
            assert.equal(case[5], #click.ref)
            assert.equal(case[2]:sub(1, case[4]), click.ua)
            assert.equal(case[3]:sub(1, case[5]), click.ref)
            assert.equal("1763800000.123", click.msec)
        end
    end)

    it("splits clicks into entries of at most per_entry, numbered on across takes", function()
        local buffer = clickbuf.new("0000000000000000", 3)
        for i = 1, 7 do
            add(buffer, "s" .. i, "1", details("::1", "", ""))
        end
        local held = { "an earlier payload" }
        local payloads, count = buffer:take(held)
        assert.equal(held, payloads)
        assert.equal(7, count)
        assert.equal(4, #payloads)
        assert.equal("an earlier payload", payloads[1])
        local seen, firsts = {}, {}
        for i = 2, 4 do
            local _, first, clicks = parse(payloads[i])
            firsts[#firsts + 1] = first
            for _, click in ipairs(clicks) do seen[#seen + 1] = click.slug end
        end
        assert.same({ 1, 4, 7 }, firsts)
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6", "s7" }, seen)
        -- Empty after a take; the next clicks go on from 8 in a new entry.
        assert.same({}, (buffer:take({})))
        add(buffer, "s8", "", details("::1", "", ""))
        local _, first, clicks = parse(buffer:take({})[1])
        assert.equal(8, first)
        assert.equal("s8", clicks[1].slug)
    end)

    it("starts a new chunk when one is full, and reuses the chunks after a take", function()
        local chunk_size = 8192
        local buffer = clickbuf.new("0123456789abcdef", 1000, chunk_size)
        local ua = string.rep("a", 400)
        local n = 100  -- about 430 bytes each: five chunks
        for i = 1, n do
            local text = details("203.0.113.9", ua, "https://r.example/" .. i)
            add(buffer, "slug" .. i, i % 2 == 0 and "" or tostring(i), text)
        end
        assert.is_true(buffer.used >= 5)
        local chunks = #buffer.chunks
        local payloads, count = buffer:take({})
        assert.equal(n, count)
        assert.equal(buffer.used, 0)
        local numbers, i = {}, 0
        for _, payload in ipairs(payloads) do
            assert.is_true(#payload <= chunk_size)
            local prefix, first, clicks = parse(payload)
            assert.equal("0123456789abcdef", prefix)
            numbers[#numbers + 1] = first
            for _, click in ipairs(clicks) do
                i = i + 1
                assert.equal("slug" .. i, click.slug)
                assert.equal(i % 2 == 0 and "" or tostring(i), click.link)
                assert.equal(ua, click.ua)
                assert.equal("https://r.example/" .. i, click.ref)
            end
        end
        assert.equal(n, i)
        assert.equal(#payloads, #numbers)
        for _ = 1, n do
            add(buffer, "again", "1", details("203.0.113.9", ua, ""))
        end
        assert.equal(chunks, #buffer.chunks)
        assert.equal(n, select(2, buffer:take({})))
    end)

    it("refuses chunks too small for the longest click", function()
        assert.has_error(function() clickbuf.new("0000000000000000", 100, 1024) end)
    end)
end)
