package.path = "./?.lua;" .. package.path
local ffi = require("ffi")
local journals = require("slingshot.journal")
local journalfile = require("slingshot.journalfile")
local spooldir = require("slingshot.spooldir")
local spool = require("spec.spool")

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

local details = spool.details

-- Adds a click the way clicks.lua does.
local function add(journal, slug, link_id, visitor, rule)
    return spool.add(journal, slug, link_id, rule or "", visitor, nil, spool.TIME)
end

-- Every unsent payload, sent in batches of about `batch` bytes.
local function drain(journal, batch)
    local all = {}
    while true do
        local payloads, offset, clicks = journal:unsent(batch or 1024 * 1024)
        if not payloads then
            assert.is_nil(offset)
            return all
        end
        for _, payload in ipairs(payloads) do
            all[#all + 1] = payload
        end
        journal:sent(offset, clicks)
    end
end

local function slugs_of(payloads)
    local seen, numbers = {}, {}
    for _, payload in ipairs(payloads) do
        local _, first, clicks = parse(payload)
        numbers[#numbers + 1] = first
        for _, click in ipairs(clicks) do
            seen[#seen + 1] = click.slug
        end
    end
    return seen, numbers
end

local dir

describe("journal", function()
    spool.per_test(before_each, after_each, function(made)
        dir = made
    end)

    it("writes each click's slug, link id, rule and details a line each, as they are", function()
        local tricky = 'say "hi"\\ \1\t","ref":"spoof \255'
        local journal = assert(journals.create(dir, "00000000000000aa", 100, 1024 * 1024))
        assert.equal(1, add(journal, "abc", "7", details("10.0.0.1", "curl/8.0", ""), "ab10"))
        assert.equal(2, add(journal, "gone", "", details("::1", tricky, "https://r.example/?a=1"),
            "scheduled " .. string.rep("h", 253)))
        journal:close_entry()
        local payloads, offset, count = journal:unsent(1024)
        assert.equal(1, #payloads)
        assert.equal(2, count)
        assert.equal(journal.header.committed, offset)
        local prefix, first, clicks = parse(payloads[1])
        assert.equal("00000000000000aa", prefix)
        assert.equal(1, first)
        assert.same({
            { slug = "abc", link = "7", rule = "ab10", msec = "1763800000.123", ip = "10.0.0.1",
              ua = "curl/8.0", ref = "" },
            { slug = "gone", link = "", rule = "scheduled " .. string.rep("h", 253),
              msec = "1763800000.123", ip = "::1", ua = tricky, ref = "https://r.example/?a=1" },
        }, clicks)
    end)

    it("writes each click's time to the millisecond, with three decimals", function()
        local journal = assert(journals.create(dir, "00000000000000ac", 100, 1024 * 1024))
        local visitor = details("::1", "", "")
        local whens = { 1763800000.123, 1763800000.123, 1763800000.124, 1763800001, 1763800001.5 }
        for _, when in ipairs(whens) do
            assert(spool.add(journal, "t", "1", "", visitor, journals.REDIRECT, when))
        end
        journal:close_entry()
        local times = {}
        for _, click in ipairs(select(3, parse(journal:unsent(4096)[1]))) do
            times[#times + 1] = click.msec
        end
        assert.same({ "1763800000.123", "1763800000.123", "1763800000.124", "1763800001.000",
            "1763800001.500" }, times)
    end)

    it("copies the visitor's values from pointers into nginx's memory, or strings", function()
        local journal = assert(journals.create(dir, "00000000000000ab", 100, 1024 * 1024))
        local function memory(text)
            local at = ffi.new("char[?]", #text)
            ffi.copy(at, text, #text)
            return at, #text
        end
        local ip, ip_len = memory("192.0.2.1")
        local ua, ua_len = memory("ffi/1.0")
        local ref, ref_len = memory("https://r.example/")
        journal:add("p", "1", "", ip, ip_len, ua, ua_len, ref, ref_len, nil, spool.TIME)
        journal:close_entry()
        local _, _, clicks = parse(journal:unsent(1024)[1])
        local click = clicks[1]
        assert.same({ "192.0.2.1", "ffi/1.0", "https://r.example/" },
            { click.ip, click.ua, click.ref })
    end)

    it("cuts long headers, and leaves everything else alone", function()
        local chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
            .. "Chrome/131.0.0.0 Safari/537.36"
        local cases = {
            { "::1", string.rep("u", 600), string.rep("r", 2000), 512, 1024 },
            { "::1", string.rep("u", 512), string.rep("r", 1024), 512, 1024 },
            { "::1", string.rep("u", 513), "", 512, 0 },
            { "2001:db8::1", "", string.rep("r", 1025), 0, 1024 },
            { "192.0.2.1", chrome, string.rep("r", 900), #chrome, 900 },
            { "::1", string.rep("\226\156\147", 200), "", 512, 0 },
        }
        local journal = assert(journals.create(dir, "00000000000000ad", 100, 1024 * 1024))
        for _, case in ipairs(cases) do
            add(journal, "cut", "1", details(case[1], case[2], case[3]))
        end
        journal:close_entry()
        local _, _, clicks = parse(journal:unsent(1024 * 1024)[1])
        for i, case in ipairs(cases) do
            local click = clicks[i]
            assert.equal(case[1], click.ip)
            assert.equal(case[2]:sub(1, case[4]), click.ua)
            assert.equal(case[3]:sub(1, case[5]), click.ref)
            assert.equal("1763800000.123", click.msec)
        end
    end)

    it("splits clicks into entries of at most per_entry, numbered on across sends", function()
        local journal = assert(journals.create(dir, "0000000000000000", 3, 1024 * 1024))
        for i = 1, 7 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        journal:close_entry()
        local payloads = drain(journal)
        local seen, firsts = slugs_of(payloads)
        assert.same({ 1, 4, 7 }, firsts)
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6", "s7" }, seen)
        assert.same({ 0, 0 }, { journal:waiting() })
        -- Nothing left after a send; the next clicks go on from 8 in a new entry.
        assert.is_nil(journal:unsent(1024))
        add(journal, "s8", "", details("::1", "", ""))
        journal:close_entry()
        assert.same({ 1, journal.header.committed - journal.header.sent }, { journal:waiting() })
        local _, first, clicks = parse(journal:unsent(1024)[1])
        assert.equal(8, first)
        assert.equal("s8", clicks[1].slug)
    end)

    it("sends in batches of about the size asked, in order, and notes how far they got", function()
        local journal = assert(journals.create(dir, "0123456789abcdef", 10, 1024 * 1024))
        local ua = string.rep("a", 400)
        for i = 1, 100 do
            add(journal, "slug" .. i, tostring(i), details("203.0.113.9", ua, "https://r.example/"))
        end
        journal:close_entry()
        local payloads, offset, clicks = journal:unsent(10000)  -- two entries of ten clicks
        assert.equal(2, #payloads)
        assert.equal(20, clicks)
        local upto = journal:committed()  -- where the whole of what it held ends
        assert.is_true(offset < upto)
        journal:sent(offset, clicks)
        assert.equal(80, (journal:waiting()))
        local seen, firsts = slugs_of(drain(journal, 10000))
        assert.same({ 21, 31, 41, 51, 61, 71, 81, 91 }, firsts)
        assert.equal("slug21", seen[1])
        assert.equal("slug100", seen[80])
        assert.equal(upto, journal.header.sent)
    end)

    it("comes round its ring, copying it into the file first, and reads across rounds", function()
        local journal = assert(journals.create(dir, "0123456789abcdef", 1000, 1024 * 1024, 16384))
        local ua = string.rep("a", 400)
        for i = 1, 200 do  -- about 90 KB: the ring five times round
            add(journal, "slug" .. i, i % 2 == 0 and "" or tostring(i),
                details("203.0.113.9", ua, "https://r.example/" .. i))
        end
        assert.is_true(journal.copied > 4 * 16384)
        assert.equal(journal.copied, journal.header.copied)
        journal:close_entry()
        local i = 0
        for _, payload in ipairs(drain(journal, 20000)) do
            local prefix, _, clicks = parse(payload)
            assert.equal("0123456789abcdef", prefix)
            for _, click in ipairs(clicks) do
                i = i + 1
                assert.equal("slug" .. i, click.slug)
                assert.equal(i % 2 == 0 and "" or tostring(i), click.link)
                assert.equal("https://r.example/" .. i, click.ref)
            end
        end
        assert.equal(200, i)
    end)

    it("reads what its ring holds there, and only the rest from the file", function()
        local journal = assert(journals.create(dir, "0123456789abcdef", 10, 1024 * 1024, 16384))
        local reads = 0
        local read = journal.read
        journal.read = function(...)
            reads = reads + 1
            return read(...)
        end
        local ua = string.rep("a", 400)
        for i = 1, 30 do  -- about 13 KB: within the ring
            add(journal, "slug" .. i, "1", details("203.0.113.9", ua, ""))
        end
        assert.equal(30, #slugs_of(drain(journal, 4096)))
        assert.equal(0, reads)
        for i = 31, 100 do  -- past it: the first clicks are in the file alone now
            add(journal, "slug" .. i, "1", details("203.0.113.9", ua, ""))
        end
        assert.is_true(journal.pos - journal.window > journal.header.sent)
        local seen = slugs_of(drain(journal, 4096))
        assert.equal(70, #seen)
        assert.equal("slug31", seen[1])
        assert.equal("slug100", seen[70])
        assert.is_true(reads > 0)
    end)

    it("reads a batch from the file and on from what the ring alone holds", function()
        local journal = assert(journals.create(dir, "0123456789abcdef", 1000, 1024 * 1024, 8192))
        local ua = string.rep("b", 300)
        for i = 1, 40 do  -- about 14 KB: the ring copied into the file as it comes round
            add(journal, "slug" .. i, "1", details("::1", ua, ""))
        end
        assert.is_true(journal.pos - journal.window > journal.header.sent)
        assert.is_true(journal.copied < journal.pos)
        local payloads, offset, clicks = journal:unsent(1024 * 1024)
        assert.equal(journal.pos, offset)
        assert.equal(40, clicks)
        local seen = slugs_of(payloads)
        assert.equal(40, #seen)
        assert.equal("slug40", seen[40])
    end)

    it("refuses clicks past its size, and says why", function()
        local journal = assert(journals.create(dir, "0123456789abcdef", 1000, 102400))
        local ua = string.rep("u", 500)
        local added, err = 0, nil
        for _ = 1, 1000 do
            local seq
            seq, err = add(journal, "s", "1", details("::1", ua, ""))
            if not seq then
                break
            end
            added = seq
            if seq == 150 then  -- the timer copies the ring: its room is not the journal's
                assert(journal:copy())
            end
        end
        assert.is_true(added > 150 and added < 205, added)
        assert.matches("is full", err)
        journal:close_entry()
        assert.equal(added, #slugs_of(drain(journal)))
    end)

    it("is taken over once its writer has gone, open entry included, never half a click", function()
        local journal = assert(journals.create(dir, "00000000000000cd", 100, 1024 * 1024))
        assert.same({ "00000000000000cd.journal" }, (spooldir.list(dir)))
        for i = 1, 5 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        journal:close_entry()
        local payloads, offset, clicks = journal:unsent(1024)
        journal:sent(offset, clicks)
        assert.equal(1, #payloads)
        for i = 6, 8 do
            add(journal, "s" .. i, "", details("::1", "", ""), "unknown")
        end
        journal:count(journals.REDIRECT, 7200.5)
        -- Half a click: bytes written past the last whole one.
        ffi.copy(journal.ring:at(journal.pos), "half\n7\n", 7)
        -- Its worker holds it: nobody else may take it.
        assert.is_nil(journals.adopt(dir, "00000000000000cd.journal"))
        journal:close()  -- the worker dies: the kernel lets go of its lock

        local taken = assert(journals.adopt(dir, "00000000000000cd.journal"))
        assert.is_nil(journals.adopt(dir, "00000000000000cd.journal"))
        assert.equal("00000000000000cd", taken.prefix)
        assert.same({ 3 }, { (taken:waiting()) })
        local rest = drain(taken)
        local seen, firsts = slugs_of(rest)
        assert.same({ "s6", "s7", "s8" }, seen)
        assert.same({ 6 }, firsts)
        assert.same({ { 7200, 1, 0 } }, taken:unsent_counts(0))
        taken:remove()
        assert.is_false(spool.exists(dir .. "/00000000000000cd.journal"))
        assert.same({}, (spooldir.list(dir)))
    end)

    it("is taken over whole: what its file holds, then what its ring alone holds", function()
        local journal = assert(journals.create(dir, "00000000000000c1", 100, 1024 * 1024))
        for i = 1, 6 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        assert(journal:copy())
        for i = 7, 9 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        local ring = journal.ring.path
        assert.is_true(spool.exists(ring))
        journal:close()  -- the worker dies

        local taken = assert(journals.adopt(dir, "00000000000000c1.journal"))
        assert.is_false(spool.exists(ring))
        assert.equal(0, taken.lost or 0)
        local seen, firsts = slugs_of(drain(taken))
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9" }, seen)
        assert.same({ 1, 7 }, firsts)
        taken:remove()
    end)

    it("keeps what a sync wrote to disk when the machine lost its ring", function()
        local journal = assert(journals.create(dir, "00000000000000c2", 100, 1024 * 1024))
        for i = 1, 10 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        assert(journal:copy())
        assert(journal:sync())
        for i = 11, 15 do  -- in the ring alone
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        assert(journal:copy())  -- in the file, not yet on disk
        for i = 16, 17 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        ffi.copy(journal.header.boot, "another boot", 13)  -- the machine restarted
        local ring = journal.ring.path
        journal:close()

        local taken = assert(journals.adopt(dir, "00000000000000c2.journal"))
        assert.equal(7, taken.lost)
        assert.same({ 10 }, { (taken:waiting()) })
        local seen = slugs_of(drain(taken))
        assert.equal(10, #seen)
        assert.equal("s10", seen[10])
        assert.is_false(spool.exists(ring))
        taken:remove()
    end)

    it("settles into its file alone, and an older edge's journal is read from its file", function()
        local ring_dir = dir .. "/memory"
        assert(spooldir.prepare_dir(ring_dir, "nobody"))
        local journal = assert(journals.create(dir, "00000000000000c3", 3, 1024 * 1024, nil,
            ring_dir))
        local ring = journal.ring.path
        assert.equal(ring_dir .. "/00000000000000c3.ring", ring)
        for i = 1, 5 do
            add(journal, "s" .. i, "1", details("::1", "", ""))
        end
        assert(journal:settle())
        assert.is_false(spool.exists(ring))
        assert.is_nil(journal.ring)
        assert.same({ "s1", "s2", "s3", "s4", "s5" }, (slugs_of(drain(journal))))
        -- A request still finishing after the exit: a small ring again.
        add(journal, "s6", "1", details("::1", "", ""))
        assert.is_true(spool.exists(ring))
        assert.equal(64 * 1024, journal.window)
        assert(journal:settle())
        assert.is_false(spool.exists(ring))
        assert.same({ "s6" }, (slugs_of(drain(journal))))
        -- What an edge before the ring wrote: its entries straight into the file.
        ffi.copy(journal.header.magic, "SLJRNL1\n", 8)
        journal.header.sent, journal.header.sent_clicks = journals.HEADER_SIZE, 0
        journal:close()
        local taken = assert(journals.adopt(dir, "00000000000000c3.journal"))
        assert.same({ "s1", "s2", "s3", "s4", "s5", "s6" }, (slugs_of(drain(taken))))
        taken:remove()
        assert.same({}, (spooldir.list(dir)))
    end)

    it("removes its ring with it", function()
        local journal = assert(journals.create(dir, "00000000000000c4", 100, 1024 * 1024))
        local ring = journal.ring.path
        add(journal, "s", "1", details("::1", "", ""))
        journal:remove()
        assert.is_false(spool.exists(ring))
    end)

    it("is not taken over again once it was sent in full and removed", function()
        local journal = assert(journals.create(dir, "00000000000000ce", 100, 1024 * 1024))
        journal:close()
        local path = dir .. "/00000000000000ce.journal"
        local first = assert(journals.adopt(dir, "00000000000000ce.journal"))
        -- A second worker opened the file before the first removed it.
        local fd = ffi.C.open(path, 2, 0)
        first:remove()
        assert.equal(0, ffi.C.flock(fd, 6))
        ffi.C.close(fd)
        assert.is_nil(journals.adopt(dir, "00000000000000ce.journal"))
    end)

    it("makes a spare once all sent, whose file and ring the next journal takes", function()
        local journal = assert(journals.create(dir, "00000000000000d1", 4, 1024 * 1024))
        local ring = journal.ring.path
        for i = 1, 9 do
            add(journal, "old" .. i, "1", details("::1", "old agent", ""))
        end
        assert(journal:copy())
        assert.equal(9, #slugs_of(drain(journal)))
        local fd, length, base = journal.fd, journal:length(), journal.ring.base
        assert(journal:make_spare())
        assert.is_true(spool.exists(ring))
        assert.is_false(spool.exists(dir .. "/00000000000000d1.journal"))
        assert.same({ {}, {}, { "00000000000000d1.spare" } }, { spooldir.list(dir) })
        -- Not a journal to take over, even when its worker has gone.
        assert.is_nil(journals.adopt(dir, "00000000000000d1.spare"))

        local after = assert(journals.create(dir, "00000000000000d2", 4, 1024 * 1024, nil, nil,
            journal))
        assert.equal(fd, after.fd)
        assert.equal(ring, after.ring.path)
        assert.equal(base, after.ring.base)  -- mapped already
        assert.same({ { "00000000000000d2.journal" }, {}, {} }, { spooldir.list(dir) })
        assert.same({ 0, 0 }, { after:waiting() })
        assert.is_nil(after:unsent(1024))
        add(after, "new1", "1", details("::1", "", ""))
        add(after, "new2", "1", details("::1", "", ""))
        assert(after:copy())
        assert.is_true(after:length() < length)  -- the old clicks are still further on in the file
        after:close()  -- its worker dies

        local taken = assert(journals.adopt(dir, "00000000000000d2.journal"))
        local payloads = drain(taken)
        assert.same({ "new1", "new2" }, (slugs_of(payloads)))
        assert.equal("00000000000000d2", (parse(payloads[1])))
        assert.is_false(spool.exists(ring))
        taken:remove()
        assert.same({ {}, {}, {} }, { spooldir.list(dir) })
    end)

    it("keeps what a sync wrote of a journal in a spare's file, its ring lost", function()
        local journal = assert(journals.create(dir, "00000000000000d3", 100, 1024 * 1024))
        for i = 1, 30 do
            add(journal, "old" .. i, "1", details("::1", "", ""))
        end
        assert(journal:copy())
        drain(journal)
        assert(journal:make_spare())
        local after = assert(journals.create(dir, "00000000000000d4", 100, 1024 * 1024, nil, nil,
            journal))
        for i = 1, 3 do
            add(after, "new" .. i, "1", details("::1", "", ""))
        end
        assert(after:copy())
        assert(after:sync())
        add(after, "new4", "1", details("::1", "", ""))  -- in the ring alone
        ffi.copy(after.header.boot, "another boot", 13)
        after:close()

        local taken = assert(journals.adopt(dir, "00000000000000d4.journal"))
        assert.equal(1, taken.lost)
        assert.same({ "new1", "new2", "new3" }, (slugs_of(drain(taken))))
        taken:remove()
    end)

    it("takes a gone worker's spare without its ring, and removes one it does not want", function()
        local journal = assert(journals.create(dir, "00000000000000d5", 100, 1024 * 1024))
        local old_ring = journal.ring.path
        add(journal, "old", "1", details("::1", "", ""))
        assert(journal:copy())
        drain(journal)
        assert(journal:make_spare())
        -- Its worker holds it.
        assert.is_nil(journals.open_spare(dir, "00000000000000d5.spare"))
        journal:close()  -- the worker dies

        local spare = assert(journals.open_spare(dir, "00000000000000d5.spare"))
        assert.is_false(spool.exists(old_ring))
        assert.is_nil(journals.open_spare(dir, "00000000000000d5.spare"))
        local after = assert(journals.create(dir, "00000000000000d6", 100, 1024 * 1024, nil, nil,
            spare))
        local ring = after.ring.path
        assert.equal(dir .. "/00000000000000d6.ring", ring)
        add(after, "new", "1", details("::1", "", ""))
        assert(after:copy())
        assert.same({ "new" }, (slugs_of(drain(after))))
        assert(after:make_spare())
        after:close()
        journals.remove_spare(assert(journals.open_spare(dir, "00000000000000d6.spare")))
        assert.is_false(spool.exists(ring))
        assert.same({ {}, {}, {} }, { spooldir.list(dir) })
    end)

    it("lets go of a spare's ring as its worker exits, and the next journal makes one", function()
        local journal = assert(journals.create(dir, "00000000000000d7", 100, 1024 * 1024))
        local ring = journal.ring.path
        assert(journal:make_spare())
        journals.drop_spare_ring(journal)
        assert.is_false(spool.exists(ring))
        assert.is_nil(journalfile.ring_of(journal.header))
        local after = assert(journals.create(dir, "00000000000000d8", 100, 1024 * 1024, nil, nil,
            journal))
        assert.equal(dir .. "/00000000000000d8.ring", after.ring.path)
        after:remove()
        assert.same({ {}, {}, {} }, { spooldir.list(dir) })
    end)
end)
