-- The reading of a click journal (journal.lua) by the timer
-- (clicksend.lua): its entries not yet sent, where its writer's ring
-- still holds them or else from its file, and how far they have gone.
-- Pure LuaJIT FFI, no ngx, so busted tests it directly.
local ffi = require("ffi")
local journalfile = require("slingshot.journalfile")

local ffi_cast = ffi.cast
local ffi_copy = ffi.copy
local ffi_string = ffi.string
local find = string.find
local sub = string.sub
local max = math.max
local min = math.min
local tonumber = tonumber

local _M = { _VERSION = "0.1.0" }

-- Each entry begins with a slot: its bytes and clicks, written when the
-- entry is closed; zero while it is open.
ffi.cdef("typedef struct { uint32_t bytes; uint32_t clicks; } slingshot_journal_slot_t;")
_M.SLOT = 8
_M.slot_ptr = ffi.typeof("slingshot_journal_slot_t *")

local SLOT, slot_ptr = _M.SLOT, _M.slot_ptr
local HEADER_SIZE = journalfile.HEADER_SIZE
local bytes = ffi.typeof("uint8_t[?]")

-- The methods of a journal that read it, given its `header`, `path`, and
-- for its writer `ring`, `window`, `pos` and `copied` (journal.lua).
local Methods = {}
_M.methods = Methods

-- `count` bytes of the journal from `offset`: a pointer to them and how
-- many there are, or nil and an error. Where the writer's ring holds them
-- (as it does all that Redis has not taken, unless Redis has been away
-- for a ring's worth of clicks), they are read there, with no copy; else
-- from the file into the journal's buffer, and what the file does not
-- hold yet from the ring.
function Methods:bytes_at(offset, count)
    local ring = self.ring
    if ring and offset >= self.pos - self.window then
        return ring:at(offset), count
    end
    if self.buffer_size < count then
        self.buffer, self.buffer_size = bytes(count), count
    end
    local in_file = ring and min(count, self.copied - offset) or count
    local got, err = self:read(self.buffer, in_file, offset)
    if not got then
        return nil, err
    end
    if got == in_file and in_file < count then
        ffi_copy(self.buffer + in_file, ring:at(offset + in_file), count - in_file)
        got = count
    end
    return self.buffer, got
end

-- The entries not yet sent, oldest first, about `max_bytes` of them (at
-- least one): their payloads, and where they end in the file and in
-- clicks, for sent(); nil when there are none. The writer's open entry is
-- closed first, so that no entry goes out in part; one still open in a
-- journal whose writer died ends at `committed`.
function Methods:unsent(max_bytes)
    if self.entry_at then
        self:close_entry()
    end
    local head = self.header
    local from, to, clicks = head.sent, head.committed, head.clicks
    if from >= to then
        return nil
    end
    local want = min(to - from, max(max_bytes, SLOT))
    local buffer, got = self:bytes_at(from, want)
    if not buffer then
        return nil, got
    end
    local payloads, off, last_first, last_count = {}, 0, 0, 0
    while off + SLOT <= got do
        local slot = ffi_cast(slot_ptr, buffer + off)
        local size, count = slot.bytes, slot.clicks
        local left = to - from - off - SLOT
        if size == 0 then
            size = left  -- the open entry: up to the last whole click
        elseif size > left then
            return nil, "click journal " .. self.path .. ": an entry runs past its end"
        end
        if off + SLOT + size > got then
            if off == 0 then  -- an entry longer than asked for: read it whole
                return self:unsent(SLOT + size)
            end
            break
        end
        local payload = ffi_string(buffer + off + SLOT, size)
        local number_end = find(payload, "\n", 18, true)
        last_first = tonumber(sub(payload, 18, number_end - 1), 16)
        last_count = count
        payloads[#payloads + 1] = payload
        off = off + SLOT + size
    end
    if from + off >= to then
        return payloads, to, clicks
    end
    return payloads, from + off, last_first + last_count - 1
end

-- Notes that every entry up to `offset` (`clicks` clicks) is in the stream.
function Methods:sent(offset, clicks)
    local head = self.header
    head.sent, head.sent_clicks = offset, clicks
end

-- Where the entries end: what unsent reads up to.
function Methods:committed()
    return self.header.committed
end

-- Clicks and bytes not yet sent.
function Methods:waiting()
    local head = self.header
    return head.clicks - head.sent_clicks, head.committed - head.sent
end

-- Bytes of entries the file holds, sent or not.
function Methods:length()
    return self.header.committed - HEADER_SIZE
end

return _M
