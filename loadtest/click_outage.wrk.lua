-- loadtest/bench_edge.wrk.lua's requests at a steady pace, for
-- loadtest/click_outage.py. Arguments: the file of paths, then the pause in
-- milliseconds each connection takes before its next request.
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "bench_edge.wrk.lua")

local load_paths = init
local pause = 0

function init(args)
    load_paths(args)
    pause = tonumber(args[2]) or 0
end

function delay()
    return pause
end
