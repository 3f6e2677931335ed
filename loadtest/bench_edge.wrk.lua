-- wrk script shared by every case of loadtest/bench_edge.py, so each pays the
-- same client-side cost: requests are built once, then handed out in turn.
-- Argument: a file with one request path per line.
local requests, count, next_index = {}, 0, 0

function init(args)
    for path in io.lines(args[1]) do
        count = count + 1
        requests[count] = wrk.format("GET", path)
    end
    next_index = math.random(count) - 1
end

function request()
    next_index = next_index % count + 1
    return requests[next_index]
end
