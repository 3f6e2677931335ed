package.path = "./?.lua;" .. package.path
local journals = require("slingshot.journal")
local hourcounts = require("slingshot.hourcounts")
local spool = require("spec.spool")

local details, add = spool.details, spool.add

local dir

describe("hour counts", function()
    spool.per_test(before_each, after_each, function(made)
        dir = made
    end)

    it("takes back the count of a click its worker was killed adding, and only that", function()
        local visitor = details("::1", "", "")
        for _, case in ipairs({
            -- Its worker killed between the count and the commit; before
            -- the count; with the click in.
            { name = "00000000000000a1", counted = true },
            { name = "00000000000000a2", counted = false },
            { name = "00000000000000a3", committed = true },
        }) do
            local journal = assert(journals.create(dir, case.name, 100, 1024 * 1024))
            for i = 1, 2 do
                assert(add(journal, "s" .. i, "1", "", visitor, journals.REDIRECT, 7200.5))
            end
            assert(add(journal, "o", "", "unknown", visitor, journals.ORPHAN, 7300))
            local head = journal.header
            if case.committed then
                assert(add(journal, "s3", "1", "", visitor, journals.REDIRECT, 7200.5))
            else
                -- What add does before the commit, for a third click.
                local counts, hour_slot = journal:hour_counts(7200.5)
                head.pending_count = counts[journals.REDIRECT] + 1
                head.pending_index = hour_slot * 3 + journals.REDIRECT
                head.pending_pos = head.committed + #"s3\n1\n\n7200.500\n::1\n\n\n"
                if case.counted then
                    counts[journals.REDIRECT] = counts[journals.REDIRECT] + 1
                end
            end
            journal:close()

            local taken = assert(journals.adopt(dir, case.name .. ".journal"))
            local redirects = case.committed and 3 or 2
            assert.same({ { 7200, redirects, 1 } }, taken:unsent_counts(0))
            assert.same({ redirects + 1 }, { (taken:waiting()) })
            taken:close()
            -- Taken back once: a second taker finds nothing pending.
            taken = assert(journals.adopt(dir, case.name .. ".journal"))
            assert.same({ { 7200, redirects, 1 } }, taken:unsent_counts(0))
            taken:remove()
        end
    end)

    local function a_journal()
        return assert(journals.create(dir, "00000000000000ef", 100, 1024 * 1024))
    end
    local function counts_alone()
        return hourcounts.counts("00000000000000ee")
    end
    for _, case in ipairs({
        { "a journal", a_journal },
        { "counts kept in memory alone (hourcounts.counts)", counts_alone },
    }) do
        it(case[1] .. " counts per UTC hour and kind, and gives what changed since sent", function()
            local journal = case[2]()
            journal:count(journals.REDIRECT, 7200.5)
            journal:count(journals.REDIRECT, 10799.999)
            journal:count(journals.ORPHAN, 7200)
            journal:count(journals.REDIRECT, 10800)
            local counts = journal:unsent_counts(0)
            table.sort(counts, function(a, b) return a[1] < b[1] end)
            assert.same({ { 7200, 2, 1 }, { 10800, 1, 0 } }, counts)
            journal:counts_sent(counts)
            assert.same({}, journal:unsent_counts(0))
            journal:count(journals.ORPHAN, 10801)
            assert.same({ { 10800, 1, 1 } }, journal:unsent_counts(0))
            -- Hours past `since` are left out (their hash has expired).
            assert.same({}, journal:unsent_counts(14400))
            -- Ten days on, an hour's slot is used again from zero.
            journal:count(journals.REDIRECT, 7200 + 240 * 3600)
            assert.same({ { 7200 + 240 * 3600, 1, 0 } }, journal:unsent_counts(14400))
        end)
    end
end)
