-- wrk script shared by every case of loadtest/bench_edge.py, so each pays the
-- same client-side cost: requests are built once, then handed out in turn.
-- Argument: a file with one request path per line.
--
-- Each request carries what a browser following a link sends: the edge
-- records User-Agent and Referer with every click, and a benchmark without
-- them would not pay for copying and checking them (a browser's pair cost a
-- cached redirect about 21,000 instructions more than none, before clickbuf
-- checked them through the FFI).
local HEADERS = {
    ["User-Agent"] = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
        .. "(KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    ["Referer"] = "https://news.example.org/2026/11/spring-sale-roundup?utm_source=newsletter",
    ["Accept"] = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    ["Accept-Language"] = "en-US,en;q=0.9",
    ["Accept-Encoding"] = "gzip, deflate, br",
}
local requests, count, next_index = {}, 0, 0

function init(args)
    for path in io.lines(args[1]) do
        count = count + 1
        requests[count] = wrk.format("GET", path, HEADERS)
    end
    next_index = math.random(count) - 1
end

function request()
    next_index = next_index % count + 1
    return requests[next_index]
end
