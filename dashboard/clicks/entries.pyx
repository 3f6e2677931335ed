# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Click entries of the stream to the rows the importer copies, in C: the
importer's hot loop (docs/benchmarks.md, the importer). Built by `make
setup` (bin/setup, Cython).

`decode_entry` reads an entry's clicks as records.py describes; `RowMaker`
reads whole batches of entries with the same checks and writes their COPY
text straight from the entry's bytes. What a row needs of an address, a user
agent, a referrer or a rule is asked of batch.BatchMaker once per value and
kept by the entry's bytes: a click costs a few dict lookups and memcpy.
"""

import re

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.list cimport PyList_GET_ITEM
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memchr, memcpy, memset

from clicks.rollups import copy_text
from links import slugs
from slingshot.click_record import RECORD

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL
    long long PyLong_AsLongLong(PyObject* obj) except? -1
    object PyLong_FromUnsignedLongLong(unsigned long long value)

VERSION = RECORD.version.encode()
ORPHAN_KINDS = RECORD.kinds
# A click's lines, by record format (slingshot/click_record.toml): slug,
# link id, [rule,] time, address, User-Agent, Referer. _read and RowMaker
# read them by these places; clicks/tests/test_record_format.py holds them
# to the declaration.
LINE_NAMES = {version.encode(): RECORD.line_names(version) for version in (RECORD.version, *RECORD.older)}
CLICK_LINES = {version: len(names) for version, names in LINE_NAMES.items()}
# An orphan visit's kind, then maybe its domain's host.
_ORPHAN = re.compile(RECORD.orphan_pattern()).fullmatch

# Binary COPY (PostgreSQL's "COPY", File Formats): the signature, no flags,
# no header extension; a click's row has CLICK_FIELDS fields (batch.CLICK_COLUMNS);
# a timestamptz is microseconds since 2000-01-01 UTC.
cdef const char* COPY_HEADER = b"PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00"
cdef enum:
    CLICK_FIELDS = 14
cdef int64_t PG_EPOCH_MS = 946_684_800_000

cdef Py_ssize_t SLUG_MIN = slugs.MIN_LENGTH, SLUG_MAX = slugs.MAX_LENGTH
cdef int64_t HOUR_MS = 3_600_000
# A batch spans fewer hours than 2^HOUR_BITS (batch.MAX_CLICK_AGE + MAX_CLICK_SKEW).
cdef enum:
    HOUR_BITS = 14


class BadEntry(ValueError):
    """An entry that breaks the contract; it goes to the dead-letter stream."""


# --- an entry's lines -------------------------------------------------------------------

cdef class _Entry:
    """An entry's clicks, checked: where each of its lines starts, in the
    UTF-8 of its text (bytes that were not UTF-8 are U+FFFD in it)."""
    cdef object text  # keeps `data` alive
    cdef const char* data
    cdef Py_ssize_t* starts  # line i is data[starts[i]:starts[i + 1] - 1]
    cdef int64_t* times  # Unix ms, a click each
    cdef Py_ssize_t count, per, at  # clicks; lines a click; the time's field in a click (click_line)
    cdef bint old  # format 3 or 4: an orphan visit's rule line is not its kind and host
    cdef uint64_t number  # the first click's
    cdef char prefix[8]  # the click id prefix's 16 hex digits, as bytes
    cdef int64_t first_ms, last_ms

    def __dealloc__(self):
        free(self.starts)
        free(self.times)

    cdef inline const char* line(self, Py_ssize_t i, Py_ssize_t* size):
        size[0] = self.starts[i + 1] - self.starts[i] - 1
        return self.data + self.starts[i]

    cdef inline Py_ssize_t click_line(self, Py_ssize_t click, Py_ssize_t field):
        """The line of a click's field: 0 slug, 1 link, then (format 4 and 5)
        2 rule; the time, address, User-Agent and Referer follow."""
        return 2 + click * self.per + field


cdef inline bint _hex(const char* s, Py_ssize_t n):
    cdef Py_ssize_t i
    for i in range(n):
        if not (b'0' <= s[i] <= b'9' or b'a' <= s[i] <= b'f'):
            return False
    return True


cdef inline int _nibble(char c) noexcept:
    """A lower-case hex digit's value."""
    return c - 48 if c <= b'9' else c - 87


cdef inline bint _digits(const char* s, Py_ssize_t n):
    cdef Py_ssize_t i
    for i in range(n):
        if not b'0' <= s[i] <= b'9':
            return False
    return True


cdef inline bint _rule_ok(const char* s, Py_ssize_t n):
    """(ab)?[1-9][0-9]? or empty: at most 20 rules and 10 destinations (links/rules.py)."""
    if n >= 2 and s[0] == b'a' and s[1] == b'b':
        s += 2
        n -= 2
        if n == 0:
            return False
    elif n == 0:
        return True
    return 1 <= n <= 2 and b'1' <= s[0] <= b'9' and _digits(s + 1, n - 1)


cdef _Entry _read(dict fields):
    """The entry of these fields, checked as records.py describes; raises BadEntry."""
    version = fields.get(b"v")
    per = CLICK_LINES.get(version)
    if per is None:
        raise BadEntry(f"unknown record version {version!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    cdef _Entry entry = _Entry.__new__(_Entry)
    entry.per = per
    entry.at = per - 4
    entry.old = version != VERSION
    entry.text = raw.decode("utf-8", "replace")
    cdef Py_ssize_t size, lines = 0, i, click, n
    cdef const char* data = PyUnicode_AsUTF8AndSize(entry.text, &size)
    cdef const char* p = data
    cdef const char* end = data + size
    entry.data = data
    while p < end:
        p = <const char*>memchr(p, b'\n', end - p)
        if p == NULL:
            break
        lines += 1
        p += 1
    if size == 0 or data[size - 1] != b'\n' or lines < 2 or (lines - 2) % per:
        raise BadEntry(f"clicks field is not two header lines and {per} lines a click, each ending in a line feed")
    entry.starts = <Py_ssize_t*>malloc((lines + 1) * sizeof(Py_ssize_t))
    if entry.starts == NULL:
        raise MemoryError()
    entry.starts[0] = 0
    p = data
    for i in range(1, lines + 1):
        p = <const char*>memchr(p, b'\n', end - p) + 1
        entry.starts[i] = p - data
    cdef const char* s
    s = entry.line(0, &n)
    cdef bint header = n == 16 and _hex(s, n)
    s = entry.line(1, &n)
    if not (header and 1 <= n <= 16 and _hex(s, n)):
        raise BadEntry("click id prefix or first number is not lower-case hex")
    s = entry.line(0, &n)
    for i in range(8):
        entry.prefix[i] = <char>(_nibble(s[2 * i]) << 4 | _nibble(s[2 * i + 1]))
    s = entry.line(1, &n)
    entry.count = (lines - 2) // per
    if not entry.count:
        return entry
    entry.number = int(s[:n], 16)
    if entry.number > 0xFFFFFFFFFFFFFFFFULL - <uint64_t>(entry.count - 1):
        raise BadEntry("click numbers run past 16 hex digits")
    cdef Py_ssize_t chars, j
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, 0), &n)
        chars = 0
        for j in range(n):
            chars += (s[j] & 0xC0) != 0x80
        if not SLUG_MIN <= chars <= SLUG_MAX:
            raise BadEntry(f"click slug is not {SLUG_MIN} to {SLUG_MAX} characters")
    # Link ids are below 2^53 (the edge reads them as JSON numbers): 16 digits at most.
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, 1), &n)
        if n and not (n <= 16 and b'1' <= s[0] <= b'9' and _digits(s + 1, n - 1)):
            raise BadEntry("click link id is not a positive integer of at most 16 digits, nor empty")
    cdef Py_ssize_t link_size
    if per == 7:
        if not entry.old:
            for click in range(entry.count):
                entry.line(entry.click_line(click, 1), &link_size)
                if not link_size:
                    s = entry.line(entry.click_line(click, 2), &n)
                    if not _ORPHAN(PyUnicode_DecodeUTF8(s, n, NULL)):
                        raise BadEntry(
                            f"orphan visit is not one of {', '.join(ORPHAN_KINDS)}, then maybe a space and a host"
                        )
        for click in range(entry.count):
            entry.line(entry.click_line(click, 1), &link_size)
            s = entry.line(entry.click_line(click, 2), &n)
            if (link_size or entry.old) and not _rule_ok(s, n):
                raise BadEntry("click rule is not a rule number, ab and a destination number, nor empty")
    entry.times = <int64_t*>malloc(entry.count * sizeof(int64_t))
    if entry.times == NULL:
        raise MemoryError()
    cdef int64_t ms
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, entry.at), &n)
        if not (5 <= n <= 16 and s[n - 4] == b'.' and _digits(s, n - 4) and _digits(s + n - 3, 3)):
            raise BadEntry("click time is not Unix seconds with three decimals")
        ms = 0
        for j in range(n):
            if s[j] != b'.':
                ms = ms * 10 + (s[j] - 48)  # an ASCII digit
        entry.times[click] = ms
        if click == 0 or ms < entry.first_ms:
            entry.first_ms = ms
        if click == 0 or ms > entry.last_ms:
            entry.last_ms = ms
    return entry


cdef inline str _str(const char* s, Py_ssize_t n):
    return PyUnicode_DecodeUTF8(s, n, NULL)


def decode_entry(dict fields) -> list:
    """The click rows of one entry, from its fields as Redis returns them
    (records.py): `(id, ts, slug, link, ip, ua, ref, rule)`. Raises BadEntry
    if the entry breaks the contract."""
    cdef _Entry entry = _read(fields)
    cdef Py_ssize_t click, n, a
    prefix = _str(entry.line(0, &n), n)
    rows = []
    for click in range(entry.count):
        a = entry.click_line(click, entry.at)
        slug = _str(entry.line(entry.click_line(click, 0), &n), n)
        link = _str(entry.line(entry.click_line(click, 1), &n), n)
        if entry.per == 7:
            rule = _str(entry.line(entry.click_line(click, 2), &n), n)
        else:
            rule = ""
        if entry.old and not link:
            rule = "unknown"
        rows.append(
            (
                f"{prefix}{entry.number + click:016x}",
                entry.times[click],
                slug,
                link,
                _str(entry.line(a + 1, &n), n),
                _str(entry.line(a + 2, &n), n),
                _str(entry.line(a + 3, &n), n),
                rule,
            )
        )
    return rows


# --- the text a batch writes ----------------------------------------------------------------

cdef struct Buf:
    char* data
    Py_ssize_t size, capacity


cdef int _reserve(Buf* buf, Py_ssize_t more) except -1:
    cdef Py_ssize_t capacity
    cdef char* data
    if buf.size + more <= buf.capacity:
        return 0
    capacity = max(buf.capacity * 2, buf.size + more, 1 << 16)
    data = <char*>realloc(buf.data, capacity)
    if data == NULL:
        raise MemoryError()
    buf.data, buf.capacity = data, capacity
    return 0


cdef inline int _put(Buf* buf, const char* s, Py_ssize_t n) except -1:
    if buf.size + n > buf.capacity:
        _reserve(buf, n)
    memcpy(buf.data + buf.size, s, n)
    buf.size += n
    return 0


cdef inline int _put_char(Buf* buf, char c) except -1:
    if buf.size + 1 > buf.capacity:
        _reserve(buf, 1)
    buf.data[buf.size] = c
    buf.size += 1
    return 0


cdef inline int _put_bytes(Buf* buf, object value) except -1:
    return _put(buf, PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value))


cdef int _put_int(Buf* buf, int64_t value) except -1:
    """`value` in decimal."""
    cdef char digits[20]
    cdef int i = 20
    cdef uint64_t rest = <uint64_t>value if value >= 0 else <uint64_t>0 - <uint64_t>value
    while True:
        i -= 1
        digits[i] = <char>(48 + rest % 10)
        rest //= 10
        if not rest:
            break
    if value < 0:
        _put_char(buf, b'-')
    return _put(buf, digits + i, 20 - i)


cdef inline int _put_be(Buf* buf, uint64_t value, int width) except -1:
    """The low `width` bytes of `value`, most significant first (network order)."""
    cdef unsigned char b[8]
    cdef int i
    for i in range(width):
        b[width - 1 - i] = value & 0xFF
        value >>= 8
    return _put(buf, <const char*>b, width)


cdef inline int _put_field(Buf* buf, const char* data, Py_ssize_t size) except -1:
    """A field of binary COPY: its length, then its bytes."""
    _put_be(buf, size, 4)
    return _put(buf, data, size)


cdef bytes _take(Buf* buf):
    text = PyBytes_FromStringAndSize(buf.data, buf.size) if buf.size else b""
    free(buf.data)
    buf.data, buf.size, buf.capacity = NULL, 0, 0
    return text


cdef const char* HEX = b"0123456789abcdef"


cdef inline int _put_id(Buf* buf, const char* prefix, uint64_t number) except -1:
    """The prefix's 16 hex digits and the click's number in 16 more."""
    cdef int i
    _reserve(buf, 32)
    memcpy(buf.data + buf.size, prefix, 16)
    for i in range(16):
        buf.data[buf.size + 31 - i] = HEX[number & 15]
        number >>= 4
    buf.size += 32
    return 0


cdef inline void _digits_into(char* to, int value, int width) noexcept:
    """`value` in `width` decimal digits, zero-padded."""
    cdef int i
    for i in range(width - 1, -1, -1):
        to[i] = <char>(48 + value % 10)
        value //= 10


cdef void _civil(int64_t days, int* year, int* month, int* day) noexcept:
    """The proleptic Gregorian date of a day since 1970-01-01 (Howard Hinnant's days_from_civil, reversed)."""
    days += 719468
    cdef int64_t era = (days if days >= 0 else days - 146096) // 146097
    cdef int64_t doe = days - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    day[0] = <int>(doy - (153 * mp + 2) // 5 + 1)
    month[0] = <int>(mp + 3 if mp < 10 else mp - 9)
    year[0] = <int>(yoe + era * 400 + (month[0] <= 2))


# --- counts a batch adds up -----------------------------------------------------------------

cdef struct Count:
    uint64_t place  # the link's place in the batch and the hour: slot << HOUR_BITS | hour
    uint64_t value  # the (dimension, value)'s id (batch.BatchMaker._value_id) + 1; 0 for an empty slot
    int64_t clicks, human


cdef struct Counts:
    Count* slots
    Py_ssize_t capacity, used


cdef inline uint64_t _mix(uint64_t x) noexcept:
    x ^= x >> 30
    x *= 0xbf58476d1ce4e5b9ULL
    x ^= x >> 27
    x *= 0x94d049bb133111ebULL
    return x ^ (x >> 31)


cdef int _grow(Counts* counts) except -1:
    cdef Py_ssize_t capacity = counts.capacity * 2 if counts.capacity else 1 << 14
    cdef Count* slots = <Count*>malloc(capacity * sizeof(Count))
    cdef Count* old = counts.slots
    cdef Py_ssize_t i, old_capacity = counts.capacity
    if slots == NULL:
        raise MemoryError()
    memset(slots, 0, capacity * sizeof(Count))
    counts.slots, counts.capacity, counts.used = slots, capacity, 0
    for i in range(old_capacity):
        if old[i].value:
            _count(counts, old[i].place, old[i].value, old[i].clicks, old[i].human)
    free(old)
    return 0


cdef inline int _count(Counts* counts, uint64_t place, uint64_t value, int64_t clicks, int64_t human) except -1:
    if (counts.used + 1) * 2 > counts.capacity:
        _grow(counts)
    cdef uint64_t mask = counts.capacity - 1
    cdef uint64_t i = _mix(place * 0x9E3779B97F4A7C15ULL ^ value) & mask
    cdef Count* slot
    while True:
        slot = &counts.slots[i]
        if slot.value == value and slot.place == place:
            slot.clicks += clicks
            slot.human += human
            return 0
        if not slot.value:
            slot.place, slot.value, slot.clicks, slot.human = place, value, clicks, human
            counts.used += 1
            return 0
        i = (i + 1) & mask


cdef struct Visitor:
    uint64_t place  # slot << HOUR_BITS | hour, then the bot bit
    int64_t hash


cdef inline void _let_others_run() noexcept:
    """Lets another thread waiting for the GIL take it. Python hands the
    GIL on only between bytecodes, so a loop in C over a whole batch would
    keep the store thread, back from PostgreSQL, waiting for as long as it
    runs. Where no thread waits, it costs a few tens of nanoseconds an entry."""
    with nogil:
        pass


cdef int _by_visitor(const void* a, const void* b) noexcept nogil:
    cdef const Visitor* x = <const Visitor*>a
    cdef const Visitor* y = <const Visitor*>b
    if x.place != y.place:
        return -1 if x.place < y.place else 1
    if x.hash != y.hash:
        return -1 if x.hash < y.hash else 1
    return 0


# --- batches ----------------------------------------------------------------------------------

cdef inline object _look_up(dict cache, const char* s, Py_ssize_t n, object make):
    """The row kept for this raw value, made (and kept) the first time."""
    key = PyBytes_FromStringAndSize(s, n)
    cdef PyObject* row = PyDict_GetItem(cache, key)
    if row != NULL:
        return <object>row
    made = make(_str(s, n))
    cache[key] = made
    return made


cdef inline int64_t _int(object row, Py_ssize_t i) except? -1:
    return PyLong_AsLongLong(PyTuple_GET_ITEM(row, i))


cdef inline int64_t _hash(object row, Py_ssize_t i) noexcept:
    """A hash the row holds as 8 bytes, in the machine's order (batch.py, _hash_bytes)."""
    cdef int64_t value
    memcpy(&value, PyBytes_AS_STRING(<object>PyTuple_GET_ITEM(row, i)), 8)
    return value


cdef inline bint _misread(const char* s, Py_ssize_t n) noexcept:
    """Whether COPY would misread these bytes as they are (a backslash, tab,
    carriage return or NUL; a line feed ends the line they came in)."""
    cdef Py_ssize_t i
    cdef char c
    for i in range(n):
        c = s[i]
        if c == b'\\' or c == b'\t' or c == b'\r' or c == 0:
            return True
    return False


cdef inline uint64_t _number(const char* s, Py_ssize_t n) noexcept:
    """The value of n decimal digits (at most 19)."""
    cdef uint64_t value = 0
    cdef Py_ssize_t i
    for i in range(n):
        value = value * 10 + <uint64_t>(s[i] - 48)
    return value


cdef inline int _put_item(Buf* buf, object row, Py_ssize_t i) except -1:
    return _put_bytes(buf, <object>PyTuple_GET_ITEM(row, i))


# The places in the rows batch.BatchMaker makes of a raw address, user agent
# and referrer (_ip_row, _agent_row, _referer_row).
cdef enum:
    IP_TEXT, IP_COUNTRY, IP_HASH, IP_BINARY
cdef enum:
    AGENT_BROWSER, AGENT_OS, AGENT_DEVICE, AGENT_BOT, AGENT_ORPHAN_TEXT, AGENT_ID, AGENT_STORED, AGENT_HASH, AGENT_BINARY
cdef enum:
    REFERER_HOST, REFERER_TEXT, REFERER_BINARY


cdef class RowMaker:
    """Writes a batch's rows (batch.Batch) from its entries. Its caches are
    batch.BatchMaker's: raw address, user agent and referrer (the entry's
    bytes) to the row made of it, and a rule to its value id; `values`
    holds each value id's COPY text of (dimension, value)."""

    cdef dict ips, agents, referers, rules
    cdef list values
    cdef object ip_row, agent_row, referer_row, rule_value

    def __init__(
        self, dict ips, dict agents, dict referers, dict rules, list values, ip_row, agent_row, referer_row, rule_value
    ):
        self.ips, self.agents, self.referers, self.rules, self.values = ips, agents, referers, rules, values
        self.ip_row, self.agent_row, self.referer_row, self.rule_value = ip_row, agent_row, referer_row, rule_value

    def make(self, list entries, batch, int64_t min_ms, int64_t max_ms):
        """Fills `batch` from these entries: what batch.BatchMaker.make promises."""
        cdef int64_t first_hour = min_ms // HOUR_MS
        cdef Buf clicks, orphans, out
        cdef Counts counts
        cdef Visitor* visitors = NULL
        cdef Py_ssize_t visitor_count = 0, visitor_capacity = 0
        memset(&clicks, 0, sizeof(Buf))
        memset(&orphans, 0, sizeof(Buf))
        memset(&out, 0, sizeof(Buf))
        memset(&counts, 0, sizeof(Counts))
        cdef list good = []
        cdef _Entry entry
        cdef int64_t first_ms = 0, last_ms = 0
        ack_ids, dead = batch.ack_ids, batch.dead
        for entry_id, fields in entries:
            _let_others_run()
            ack_ids.append(entry_id)
            if not fields:
                continue  # deleted from the stream while pending: nothing to store
            try:
                entry = _read(fields)
                if entry.count and (entry.first_ms < min_ms or entry.last_ms > max_ms):
                    raise BadEntry("click time is out of range")
            except BadEntry as exc:
                dead.append((entry_id, fields, str(exc)))
                continue
            if entry.count:
                if not good or entry.first_ms < first_ms:
                    first_ms = entry.first_ms
                if not good or entry.last_ms > last_ms:
                    last_ms = entry.last_ms
                good.append(entry)
        if not good:
            return
        batch.first_ms, batch.last_ms = first_ms, last_ms
        cdef dict ips = self.ips, agents = self.agents, referers = self.referers, rules = self.rules
        cdef dict places = {}, batch_agents = batch.agents
        cdef list links = []
        cdef Py_ssize_t click, n, a, link_size, slug_size, rule_size, served = 0, orphan_count = 0
        cdef const char* link
        cdef const char* slug
        cdef const char* rule
        cdef const char* prefix
        cdef const char* space
        cdef int64_t ms, second, last_second = -1, bot
        cdef uint64_t place, visitor_place
        cdef char when[26]
        cdef int year, month, day, seconds_of_day
        memcpy(when + 23, b"+00", 3)
        cdef PyObject* found
        cdef Buf* buf
        cdef Visitor* grown
        cdef object agent, last_agent = None
        try:
            for entry in good:
                _let_others_run()
                prefix = entry.line(0, &n)
                for click in range(entry.count):
                    a = entry.click_line(click, entry.at)
                    ip = _look_up(ips, entry.line(a + 1, &n), n, self.ip_row)
                    agent = _look_up(agents, entry.line(a + 2, &n), n, self.agent_row)
                    referer = _look_up(referers, entry.line(a + 3, &n), n, self.referer_row)
                    if agent is not last_agent:
                        # user_agents: the agent's id and the agent as stored.
                        PyDict_SetItem(
                            batch_agents, <object>PyTuple_GET_ITEM(agent, AGENT_ID), <object>PyTuple_GET_ITEM(agent, AGENT_STORED)
                        )
                        last_agent = agent
                    ms = entry.times[click]
                    second = ms // 1000
                    if second != last_second:
                        last_second = second
                        _civil(second // 86400, &year, &month, &day)
                        seconds_of_day = <int>(second % 86400)
                        _digits_into(when, year, 4)
                        when[4] = b'-'
                        _digits_into(when + 5, month, 2)
                        when[7] = b'-'
                        _digits_into(when + 8, day, 2)
                        when[10] = b' '
                        _digits_into(when + 11, seconds_of_day // 3600, 2)
                        when[13] = b':'
                        _digits_into(when + 14, seconds_of_day // 60 % 60, 2)
                        when[16] = b':'
                        _digits_into(when + 17, seconds_of_day % 60, 2)
                        when[19] = b'.'
                    # "YYYY-MM-DD HH:MM:SS.mmm+00"
                    _digits_into(when + 20, <int>(ms % 1000), 3)
                    slug = entry.line(entry.click_line(click, 0), &slug_size)
                    link = entry.line(entry.click_line(click, 1), &link_size)
                    if entry.per == 7:
                        rule = entry.line(entry.click_line(click, 2), &rule_size)
                    else:
                        rule, rule_size = b"", 0
                    if not link_size:
                        # An orphan visit: a line of COPY text.
                        orphan_count += 1
                        _put_id(&orphans, prefix, entry.number + click)
                        _put_char(&orphans, b'\t')
                        _put(&orphans, when, 26)
                        _put_char(&orphans, b'\t')
                        if _misread(slug, slug_size):
                            _put_bytes(&orphans, copy_text(_str(slug, slug_size).replace("\x00", "")).encode())
                        else:
                            _put(&orphans, slug, slug_size)
                        _put_char(&orphans, b'\t')
                        _put_item(&orphans, ip, IP_TEXT)
                        _put_char(&orphans, b'\t')
                        _put_item(&orphans, agent, AGENT_ORPHAN_TEXT)
                        _put_char(&orphans, b'\t')
                        _put_item(&orphans, referer, REFERER_TEXT)
                        _put_char(&orphans, b'\t')
                        if entry.old:
                            _put(&orphans, b"unknown\t", 8)
                        else:
                            space = <const char*>memchr(rule, b' ', rule_size)
                            if space == NULL:
                                _put(&orphans, rule, rule_size)
                                _put_char(&orphans, b'\t')
                            else:
                                _put(&orphans, rule, space - rule)
                                _put_char(&orphans, b'\t')
                                _put(&orphans, space + 1, rule_size - (space - rule) - 1)
                        _put_char(&orphans, b'\n')
                        continue
                    # A click: a row of binary COPY (CLICK_COLUMNS).
                    served += 1
                    if not clicks.size:
                        _put(&clicks, COPY_HEADER, 19)
                    _put_be(&clicks, CLICK_FIELDS, 2)
                    _put_be(&clicks, 16, 4)
                    _put(&clicks, entry.prefix, 8)
                    _put_be(&clicks, entry.number + click, 8)
                    _put_be(&clicks, 8, 4)
                    _put_be(&clicks, <uint64_t>((ms - PG_EPOCH_MS) * 1000), 8)
                    if _misread(slug, slug_size) and memchr(slug, 0, slug_size):
                        kept = _str(slug, slug_size).replace("\x00", "").encode()
                        _put_field(&clicks, kept, len(kept))
                    else:
                        _put_field(&clicks, slug, slug_size)
                    _put_be(&clicks, 8, 4)
                    _put_be(&clicks, _number(link, link_size), 8)
                    _put_item(&clicks, ip, IP_BINARY)
                    _put_item(&clicks, agent, AGENT_BINARY)
                    _put_item(&clicks, referer, REFERER_BINARY)
                    if rule_size:
                        _put_field(&clicks, rule, rule_size)
                    else:
                        _put_be(&clicks, 0xFFFFFFFF, 4)  # NULL (-1): the link's own url
                    # The breakdown: a count a click and dimension.
                    key = PyLong_FromUnsignedLongLong(_number(link, link_size))
                    found = PyDict_GetItem(places, key)
                    if found == NULL:
                        places[key] = len(links)
                        place = len(links)
                        links.append(link[:link_size])
                    else:
                        place = PyLong_AsLongLong(found)
                    place = place << HOUR_BITS | (ms // HOUR_MS - first_hour)
                    bot = _int(agent, AGENT_BOT)
                    _count(&counts, place, _int(agent, AGENT_BROWSER) + 1, 1, 1 - bot)
                    _count(&counts, place, _int(agent, AGENT_OS) + 1, 1, 1 - bot)
                    _count(&counts, place, _int(agent, AGENT_DEVICE) + 1, 1, 1 - bot)
                    _count(&counts, place, _int(referer, REFERER_HOST) + 1, 1, 1 - bot)
                    _count(&counts, place, _int(ip, IP_COUNTRY) + 1, 1, 1 - bot)
                    if rule_size:
                        found = PyDict_GetItem(rules, rule[:rule_size])
                        if found == NULL:
                            made = self.rule_value(_str(rule, rule_size))
                            rules[rule[:rule_size]] = made
                            found = <PyObject*>made
                        _count(&counts, place, PyLong_AsLongLong(found) + 1, 1, 1 - bot)
                    # A visitor is the anonymised network and the user agent
                    # (docs/rollups.md): the halves are hashed with different
                    # keys, so their XOR is as good as a hash of the pair.
                    if visitor_count == visitor_capacity:
                        visitor_capacity = max(visitor_capacity * 2, 1 << 12)
                        grown = <Visitor*>realloc(visitors, visitor_capacity * sizeof(Visitor))
                        if grown == NULL:
                            raise MemoryError()
                        visitors = grown
                    visitors[visitor_count].place = place << 1 | bot
                    visitors[visitor_count].hash = _hash(ip, IP_HASH) ^ _hash(agent, AGENT_HASH)
                    visitor_count += 1
            if clicks.size:
                _put_be(&clicks, 0xFFFF, 2)  # the binary COPY's trailer (-1)
            batch.clicks, batch.orphans = served, orphan_count
            batch.click_rows, batch.orphan_rows = _take(&clicks), _take(&orphans)
            batch.link_ids = set(places)
            # batch_breakdown: link, hour, dimension, value, clicks, human clicks.
            values = self.values
            for click in range(counts.capacity):
                if not click & 0xFFF:
                    _let_others_run()
                if counts.slots[click].value:
                    _put_bytes(&out, links[counts.slots[click].place >> HOUR_BITS])
                    _put_char(&out, b'\t')
                    _put_int(&out, first_hour + <int64_t>(counts.slots[click].place & ((1 << HOUR_BITS) - 1)))
                    _put_char(&out, b'\t')
                    _put_bytes(&out, <object>PyList_GET_ITEM(values, counts.slots[click].value - 1))
                    _put_char(&out, b'\t')
                    _put_int(&out, counts.slots[click].clicks)
                    _put_char(&out, b'\t')
                    _put_int(&out, counts.slots[click].human)
                    _put_char(&out, b'\n')
            batch.breakdown_rows = _take(&out)
            # batch_visitor_sets: link, hour, bot, the distinct visitors.
            with nogil:
                qsort(visitors, visitor_count, sizeof(Visitor), _by_visitor)
            for click in range(visitor_count):
                if not click & 0xFFF:
                    _let_others_run()
                visitor_place = visitors[click].place
                if click and visitor_place == visitors[click - 1].place:
                    if visitors[click].hash != visitors[click - 1].hash:
                        _put_char(&out, b',')
                        _put_int(&out, visitors[click].hash)
                    continue
                if click:
                    _put(&out, b"}\n", 2)
                _put_bytes(&out, links[visitor_place >> (HOUR_BITS + 1)])
                _put_char(&out, b'\t')
                _put_int(&out, first_hour + <int64_t>((visitor_place >> 1) & ((1 << HOUR_BITS) - 1)))
                _put(&out, b"\tt\t{" if visitor_place & 1 else b"\tf\t{", 4)
                _put_int(&out, visitors[click].hash)
            if visitor_count:
                _put(&out, b"}\n", 2)
            batch.visitor_rows = _take(&out)
        finally:
            free(clicks.data)
            free(orphans.data)
            free(out.data)
            free(counts.slots)
            free(visitors)

