# An entry's lines, checked as records.py describes (included by entries.pyx).

# A click's lines' places, by record format: slug, link, rule (-1: none), time, address, User-Agent, Referer.
_PLACES = {
    version: tuple(names.index(name) if name in names else -1 for name in ("slug", "link", "rule", "time", "ip", "ua", "ref"))
    for version, names in LINE_NAMES.items()
}


cdef class _Entry:
    """An entry's clicks, checked: where each of its lines starts, in the
    UTF-8 of its text (bytes that were not UTF-8 are U+FFFD in it)."""
    cdef object text  # keeps `data` alive
    cdef const char* data
    cdef Py_ssize_t* starts  # line i is data[starts[i]:starts[i + 1] - 1]
    cdef int64_t* times  # Unix ms, a click each
    cdef Py_ssize_t count, per  # clicks; lines a click
    # Each line's place in a click (click_line); `rule` is -1 in format 3.
    cdef Py_ssize_t slug, link, rule, time, ip, ua, ref
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

    cdef inline Py_ssize_t click_line(self, Py_ssize_t click, Py_ssize_t place):
        """The line of a click's field at this place (self.slug, self.link, ...)."""
        return 2 + click * self.per + place


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


cdef inline str _str(const char* s, Py_ssize_t n):
    return PyUnicode_DecodeUTF8(s, n, NULL)


cdef _Entry _read(dict fields):
    """The entry of these fields, checked as records.py describes; raises BadEntry."""
    version = fields.get(b"v")
    places = _PLACES.get(version)
    if places is None:
        raise BadEntry(f"unknown record version {version!r}")
    raw = fields.get(b"clicks")
    if raw is None:
        raise BadEntry("entry has no clicks field")
    cdef _Entry entry = _Entry.__new__(_Entry)
    entry.per = CLICK_LINES[version]
    entry.slug, entry.link, entry.rule, entry.time, entry.ip, entry.ua, entry.ref = places
    entry.old = version != VERSION
    entry.text = raw.decode("utf-8", "replace")
    _split_lines(entry)
    _read_header(entry)
    if entry.count:
        _check_slugs_and_links(entry)
        if entry.rule >= 0:
            _check_rules(entry)
        _read_times(entry)
    return entry


cdef int _split_lines(_Entry entry) except -1:
    """Where each line starts; the clicks they make."""
    cdef Py_ssize_t size, lines = 0, i
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
    if size == 0 or data[size - 1] != b'\n' or lines < 2 or (lines - 2) % entry.per:
        raise BadEntry(
            f"clicks field is not two header lines and {entry.per} lines a click, each ending in a line feed"
        )
    entry.starts = <Py_ssize_t*>malloc((lines + 1) * sizeof(Py_ssize_t))
    if entry.starts == NULL:
        raise MemoryError()
    entry.starts[0] = 0
    p = data
    for i in range(1, lines + 1):
        p = <const char*>memchr(p, b'\n', end - p) + 1
        entry.starts[i] = p - data
    entry.count = (lines - 2) // entry.per
    return 0


cdef int _read_header(_Entry entry) except -1:
    """The click id prefix and, if there are clicks, the first click's number."""
    cdef Py_ssize_t n, i
    cdef const char* s = entry.line(0, &n)
    cdef bint header = n == 16 and _hex(s, n)
    s = entry.line(1, &n)
    if not (header and 1 <= n <= 16 and _hex(s, n)):
        raise BadEntry("click id prefix or first number is not lower-case hex")
    s = entry.line(0, &n)
    for i in range(8):
        entry.prefix[i] = <char>(_nibble(s[2 * i]) << 4 | _nibble(s[2 * i + 1]))
    if not entry.count:
        return 0
    s = entry.line(1, &n)
    entry.number = int(s[:n], 16)
    if entry.number > 0xFFFFFFFFFFFFFFFFULL - <uint64_t>(entry.count - 1):
        raise BadEntry("click numbers run past 16 hex digits")
    return 0


cdef int _check_slugs_and_links(_Entry entry) except -1:
    cdef Py_ssize_t click, n, j, chars
    cdef const char* s
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, entry.slug), &n)
        chars = 0
        for j in range(n):
            chars += (s[j] & 0xC0) != 0x80
        if not SLUG_MIN <= chars <= SLUG_MAX:
            raise BadEntry(f"click slug is not {SLUG_MIN} to {SLUG_MAX} characters")
    # Link ids are below 2^53 (the edge reads them as JSON numbers): 16 digits at most.
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, entry.link), &n)
        if n and not (n <= 16 and b'1' <= s[0] <= b'9' and _digits(s + 1, n - 1)):
            raise BadEntry("click link id is not a positive integer of at most 16 digits, nor empty")
    return 0


cdef int _check_rules(_Entry entry) except -1:
    """A redirect's rule line; in format 5, an orphan visit's kind and host."""
    cdef Py_ssize_t click, n, link_size
    cdef const char* s
    if not entry.old:
        for click in range(entry.count):
            entry.line(entry.click_line(click, entry.link), &link_size)
            if not link_size:
                s = entry.line(entry.click_line(click, entry.rule), &n)
                if not _ORPHAN(PyUnicode_DecodeUTF8(s, n, NULL)):
                    raise BadEntry(
                        f"orphan visit is not one of {', '.join(ORPHAN_KINDS)}, then maybe a space and a host"
                    )
    for click in range(entry.count):
        entry.line(entry.click_line(click, entry.link), &link_size)
        s = entry.line(entry.click_line(click, entry.rule), &n)
        if (link_size or entry.old) and not _rule_ok(s, n):
            raise BadEntry("click rule is not a rule number, ab and a destination number, nor empty")
    return 0


cdef int _read_times(_Entry entry) except -1:
    """Each click's time in Unix ms, and the entry's first and last."""
    entry.times = <int64_t*>malloc(entry.count * sizeof(int64_t))
    if entry.times == NULL:
        raise MemoryError()
    cdef Py_ssize_t click, n, j
    cdef const char* s
    cdef int64_t ms
    for click in range(entry.count):
        s = entry.line(entry.click_line(click, entry.time), &n)
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
    return 0


def decode_entry(dict fields) -> list:
    """The click rows of one entry, from its fields as Redis returns them
    (records.py): `(id, ts, slug, link, ip, ua, ref, rule)`. Raises BadEntry
    if the entry breaks the contract."""
    cdef _Entry entry = _read(fields)
    cdef Py_ssize_t click, n
    prefix = _str(entry.line(0, &n), n)
    rows = []
    for click in range(entry.count):
        slug = _str(entry.line(entry.click_line(click, entry.slug), &n), n)
        link = _str(entry.line(entry.click_line(click, entry.link), &n), n)
        if entry.rule >= 0:
            rule = _str(entry.line(entry.click_line(click, entry.rule), &n), n)
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
                _str(entry.line(entry.click_line(click, entry.ip), &n), n),
                _str(entry.line(entry.click_line(click, entry.ua), &n), n),
                _str(entry.line(entry.click_line(click, entry.ref), &n), n),
                rule,
            )
        )
    return rows
