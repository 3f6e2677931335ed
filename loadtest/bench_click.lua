-- loadtest/bench_click.py's measure, run by nginx in one request: what a
-- click's parts cost the worker, in ns of its CPU, each in a loop of its
-- own (arguments: ?n=<clicks>). It prints a line per part:
--   read    nginx's click map read, made again at each read (a copy of the
--           map, `volatile`), as a request reads it once
--   add     the journal's add of those details (journal.lua), its pages
--           faulted in as it grows, as a request's click does
--   unsent  the timer's read of what the journal holds (unsent and sent),
--           entry by entry, as its flushes do
local ffi = require("ffi")
local journals = require("slingshot.journal")
local nginxvar = require("slingshot.nginxvar")

-- Declared at the first request (the file runs again at each one).
pcall(ffi.cdef, [[
typedef long slingshot_time_t;
struct slingshot_timespec { slingshot_time_t tv_sec; long tv_nsec; };
int clock_gettime(int clock, struct slingshot_timespec *at);
]])
local CLOCK_PROCESS_CPUTIME_ID = 2
local at = ffi.new("struct slingshot_timespec")

local function cpu()
    ffi.C.clock_gettime(CLOCK_PROCESS_CPUTIME_ID, at)
    return tonumber(at.tv_sec) + tonumber(at.tv_nsec) * 1e-9
end

local n = tonumber(ngx.var.arg_n) or 1000000
local read = nginxvar.reader("slingshot_click_volatile")

local t0 = cpu()
local bytes = 0
for _ = 1, n do
    local _, len = read()
    bytes = bytes + len
end
local read_ns = (cpu() - t0) / n * 1e9

local details, len = read()
local copy = ffi.new("char[?]", len)
ffi.copy(copy, details, len)
local dir = ngx.config.prefix() .. "costs-spool"
local journal = assert(journals.create(dir, "00000000000000ff", 100, 4 * 1024 * 1024 * 1024))
local when = ngx.now()
local add_s, unsent_s, done = 0, 0, 0
while done < n do
    -- A flush's worth at a time (two workers at 90,000 clicks a second,
    -- a flush every 0.1 s), the time of each a millisecond on.
    local batch = math.min(4500, n - done)
    t0 = cpu()
    for _ = 1, batch do
        journal:add("bench", "1", "", copy, len, journals.REDIRECT, when)
    end
    local t1 = cpu()
    while true do
        local payloads, offset, clicks = journal:unsent(2 * 1024 * 1024)
        if not payloads then
            break
        end
        journal:sent(offset, clicks)
    end
    add_s, unsent_s = add_s + (t1 - t0), unsent_s + (cpu() - t1)
    done = done + batch
    when = when + 0.001
end
local record = journal:length() / n
journal:remove()

ngx.say(string.format("read %.1f %d", read_ns, bytes / n))
ngx.say(string.format("add %.1f %d", add_s / n * 1e9, record))
ngx.say(string.format("unsent %.1f %d", unsent_s / n * 1e9, record))
