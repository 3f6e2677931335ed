-- Every click accounted for: per UTC hour, the redirects and orphan visits
-- each worker recorded as clicks, counted in its click journal
-- (journal.lua, beside the clicks themselves) and sent as they stand to a
-- Redis hash per hour (contract.SERVED_KEY_PREFIX .. hour start in Unix
-- seconds), a field per journal and kind, `<journal's id prefix>:redirect`
-- and `<...>:orphan`, which the dashboard adds up beside the clicks stored
-- for that hour (docs/operations.md, "Every click accounted for").
-- Absolute values, not increments: a count sent twice (after an error, or
-- from a journal a sibling took over) changes nothing.
local contract = require("slingshot.contract")

local _M = { _VERSION = "0.2.0" }

-- How long an hour's hash stays in Redis: long enough to compare a week.
_M.TTL = 8 * 24 * 3600

function _M.key(hour)
    return contract.SERVED_KEY_PREFIX .. hour
end

-- The commands that send the counts of the journal `prefix` (a list of
-- { hour start, redirects, orphan visits }, journal:unsent_counts): for
-- each hour, { key, redirect field, n, orphan field, n }.
function _M.commands(prefix, counts)
    local redirect, orphan = prefix .. ":redirect", prefix .. ":orphan"
    local out = {}
    for i = 1, #counts do
        local hour = counts[i]
        out[i] = { _M.key(hour[1]), redirect, hour[2], orphan, hour[3] }
    end
    return out
end

return _M
