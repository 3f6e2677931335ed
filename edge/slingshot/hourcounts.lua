-- Clicks served, counted per UTC hour and kind (what the accounting holds
-- as served, accounting.lua): in a journal's header (journal.lua), so that
-- they outlive the worker with its clicks, or in the worker's memory alone
-- for the clicks it served while it had no journal (counts). Each hour
-- has a slot of three numbers: the hour (Unix seconds / HOUR), then its
-- redirects and orphan visits, indexed by REDIRECT and ORPHAN.
--
-- A click's count is made just before its commit, once the header's
-- `pending_*` say which count it raises to what and where the click
-- will end (journalwrite.lua's add): a worker killed between the two
-- leaves a count its journal's taker can tell from one whose click is
-- in, and take back (undo_pending). They come after the hours, so a
-- journal of an older edge has zeros there, which say nothing is
-- pending. Pure LuaJIT FFI, no ngx.
local ffi = require("ffi")

local floor = math.floor
local format = string.format
local setmetatable = setmetatable
local pairs = pairs

local _M = { _VERSION = "0.1.0" }

_M.HOUR = 3600
-- A slot per hour, by hour number: ten days, more than the served hashes live.
_M.HOUR_SLOTS = 240
-- Kinds of counts, as accounting.lua names them.
_M.REDIRECT, _M.ORPHAN = 1, 2

local HOUR, HOUR_SLOTS = _M.HOUR, _M.HOUR_SLOTS

-- The methods below work on any table with `header.hours` (HOUR_SLOTS
-- slots of three doubles), `hour`, `counts`, `hour_slot` (the current
-- hour's, -1 and nil at first) and `sent_counts` (hour start -> the
-- redirects and orphan visits last sent): a journal, or counts().
local Methods = {}
_M.methods = Methods

-- The counts of the UTC hour of `at` (Unix seconds), and their slot.
function Methods:hour_counts(at)
    local hour = floor(at / HOUR)
    if hour ~= self.hour then
        local hour_slot = hour % HOUR_SLOTS
        local counts = self.header.hours[hour_slot]
        if counts[0] ~= hour then
            counts[0], counts[1], counts[2] = hour, 0, 0
        end
        self.hour, self.counts, self.hour_slot = hour, counts, hour_slot
    end
    return self.counts, self.hour_slot
end

-- Adds one to the count of `kind` (REDIRECT or ORPHAN) in the UTC hour of
-- `at` (Unix seconds): a click served that the journal has no room for.
function Methods:count(kind, at)
    local counts = self:hour_counts(at)
    counts[kind] = counts[kind] + 1
end

-- The counts of every hour since `since` (Unix seconds) that differ from
-- what was last sent: a list of { hour start, redirects, orphan visits }.
function Methods:unsent_counts(since)
    local out = {}
    local hours, sent = self.header.hours, self.sent_counts
    for i = 0, HOUR_SLOTS - 1 do
        local counts = hours[i]
        local start = counts[0] * HOUR
        local redirects, orphans = counts[1], counts[2]
        if start >= since and redirects + orphans > 0 then
            local last = sent[start]
            if not last or last[1] ~= redirects or last[2] ~= orphans then
                out[#out + 1] = { start, redirects, orphans }
            end
        end
    end
    return out
end

-- Notes counts (as unsent_counts gave them) as sent.
function Methods:counts_sent(list)
    local sent = self.sent_counts
    for i = 1, #list do
        local counts = list[i]
        sent[counts[1]] = { counts[2], counts[3] }
    end
end

-- In the header `head` of a journal whose worker was killed adding a
-- click (its `pending_pos` past the end of the last whole click): the
-- click is not in the journal, so neither is it served. Its count, if
-- made, is undone.
function _M.undo_pending(head)
    if head.pending_pos > head.committed then
        local index = head.pending_index
        local counts = head.hours[floor(index / 3)]
        local kind = index % 3
        if counts[kind] == head.pending_count then
            counts[kind] = head.pending_count - 1
        end
        head.pending_pos = 0
    end
end

-- Hour counts kept in this process's memory alone, with a journal's
-- `prefix`, count, unsent_counts and counts_sent: for the clicks a worker
-- served while it had no journal to write them into (clickspool.lua).
local Counts = {}
for name, method in pairs(Methods) do
    Counts[name] = method
end
Counts.__index = Counts
local hours_type = ffi.typeof(format("double[%d][3]", HOUR_SLOTS))

function _M.counts(prefix)
    return setmetatable({
        prefix = prefix, header = { hours = hours_type() },
        hour = -1, counts = nil, hour_slot = nil, sent_counts = {},
    }, Counts)
end

return _M
