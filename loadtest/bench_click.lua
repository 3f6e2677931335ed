-- loadtest/bench_click.py's measure, run by nginx in one request: what a
-- click's parts cost the worker, in ns of its CPU, each in a loop of its
-- own (arguments: ?n=<clicks>). It prints a line per part:
--   read    what a click records of the request, as the checkout reads it:
--           nginx's click map (an older checkout's; a copy of it,
--           `volatile`, made again at each read as a request makes it
--           once), or the method and the three variables, each as nginx
--           keeps it
--   add     the journal's add of those details (journalwrite.lua), into its
--           ring in the click memory folder (an older checkout's: into the
--           file's pages, faulted in as it grows), as a request's click does
--   copy    the timer's copy of the ring into the journal's file, one
--           whose file was a spare's (a new file in an older checkout;
--           none in one older still, whose clicks were written there)
--   unsent  the timer's read of what the journal holds (unsent and sent),
--           entry by entry, as its flushes do
local ffi = require("ffi")
local journals = require("slingshot.journal")
local config = require("slingshot.config")
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
-- An older checkout's nginx.conf joined the details in a map, which
-- bench_click.py copied as this volatile one; this one's edge reads the
-- three variables itself (clicks.lua), and the method, as HEAD is no click.
local joined = nginxvar.reader("slingshot_click_volatile")
local reads = joined() and { joined } or {
    nginxvar.reader("remote_addr"), nginxvar.reader("http_user_agent"), nginxvar.reader("http_referer"),
}
local get_method = ngx.req.get_method

local t0 = cpu()
local bytes = 0
if #reads == 1 then
    for _ = 1, n do
        local _, len = joined()
        bytes = bytes + len
    end
else
    local address, user_agent, referer = reads[1], reads[2], reads[3]
    for _ = 1, n do
        if get_method() ~= "HEAD" then
            local _, ip_len = address()
            local _, ua_len = user_agent()
            local _, ref_len = referer()
            bytes = bytes + ip_len + ua_len + ref_len + 2
        end
    end
end
local read_ns = (cpu() - t0) / n * 1e9

-- What the read gave, copied once: the journal copies from nginx's memory.
local values = {}
for i, read in ipairs(reads) do
    local value, len = read()
    local copy = ffi.new("char[?]", len)
    ffi.copy(copy, value, len)
    values[i] = { copy, len }
end
local function add(journal, when)
    if #values == 1 then
        return journal:add("bench", "1", "", values[1][1], values[1][2], journals.REDIRECT, when)
    end
    local ip, ua, ref = values[1], values[2], values[3]
    return journal:add("bench", "1", "", ip[1], ip[2], ua[1], ua[2], ref[1], ref[2], journals.REDIRECT, when)
end

local dir = ngx.config.prefix() .. "costs-spool"
local function new_journal(prefix, spare)
    return assert(journals.create(dir, prefix, 100, 4 * 1024 * 1024 * 1024, nil,
        config.click_memory_dir, spare))
end

-- Writes n clicks into `journal` a flush's worth at a time (two workers at
-- 90,000 clicks a second, a flush every 0.1 s), the time of each a
-- millisecond on, as requests and the timer do: the seconds of CPU its
-- adds, copies and reads took.
local function run(journal)
    local when = ngx.now()
    local add_s, copy_s, unsent_s, done = 0, 0, 0, 0
    while done < n do
        local batch = math.min(4500, n - done)
        local started = cpu()
        for _ = 1, batch do
            add(journal, when)
        end
        local t1 = cpu()
        if journal.copy then
            assert(journal:copy())
        end
        local t2 = cpu()
        while true do
            local payloads, offset, clicks = journal:unsent(2 * 1024 * 1024)
            if not payloads then
                break
            end
            journal:sent(offset, clicks)
        end
        add_s, copy_s = add_s + (t1 - started), copy_s + (t2 - t1)
        unsent_s = unsent_s + (cpu() - t2)
        done = done + batch
        when = when + 0.001
    end
    return add_s, copy_s, unsent_s
end

-- A worker writes each journal after its first two into the file of one
-- all sent (its spare), whose pages the kernel has already: so does this
-- checkout here, after a journal of as many clicks; an older one, which
-- makes every journal's file anew, writes into a new file.
local spare = nil
local first = new_journal("00000000000000fe")
if first.make_spare then
    run(first)
    assert(first:make_spare())
    spare = first
else
    first:remove()
end
local journal = new_journal("00000000000000ff", spare)
local add_s, copy_s, unsent_s = run(journal)
local record = journal:length() / n
journal:remove()

ngx.say(string.format("read %.1f %d", read_ns, bytes / n))
ngx.say(string.format("add %.1f %d", add_s / n * 1e9, record))
ngx.say(string.format("copy %.1f %d", copy_s / n * 1e9, record))
ngx.say(string.format("unsent %.1f %d", unsent_s / n * 1e9, record))
