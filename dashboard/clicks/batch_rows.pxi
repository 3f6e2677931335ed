# A batch's rows from its entries' lines: what RowMaker writes of each click (included by entries.pyx).


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
# A click's address and country are at IP_BINARY + its link's code of
# enrichment.IP_STORAGE_CODES (anonymised, whole, none).
cdef enum:
    IP_TEXT, IP_COUNTRY, IP_HASH, IP_BINARY
cdef enum:
    AGENT_BROWSER, AGENT_OS, AGENT_DEVICE, AGENT_BOT, AGENT_ORPHAN_TEXT, AGENT_ID, AGENT_STORED, AGENT_HASH, AGENT_BINARY
cdef enum:
    REFERER_HOST, REFERER_TEXT, REFERER_BINARY



cdef struct When:
    char text[26]  # "YYYY-MM-DD HH:MM:SS.mmm+00"
    int64_t second  # the second text[:19] is of; -1 for none yet


cdef inline void _start_when(When* when) noexcept:
    when.second = -1
    memcpy(when.text + 23, b"+00", 3)


cdef inline const char* _when(When* when, int64_t ms) noexcept:
    """A click's time as COPY text: its date and time of day made again
    only when the second changes, which in a batch of clicks in time order
    is seldom."""
    cdef int64_t second = ms // 1000
    cdef int year, month, day, seconds_of_day
    if second != when.second:
        when.second = second
        _civil(second // 86400, &year, &month, &day)
        seconds_of_day = <int>(second % 86400)
        _digits_into(when.text, year, 4)
        when.text[4] = b'-'
        _digits_into(when.text + 5, month, 2)
        when.text[7] = b'-'
        _digits_into(when.text + 8, day, 2)
        when.text[10] = b' '
        _digits_into(when.text + 11, seconds_of_day // 3600, 2)
        when.text[13] = b':'
        _digits_into(when.text + 14, seconds_of_day // 60 % 60, 2)
        when.text[16] = b':'
        _digits_into(when.text + 17, seconds_of_day % 60, 2)
        when.text[19] = b'.'
    _digits_into(when.text + 20, <int>(ms % 1000), 3)
    return when.text


cdef int _put_orphan(
    Buf* orphans, _Entry entry, Py_ssize_t click, const char* when, object ip, object agent, object referer
) except -1:
    """An orphan visit: a line of COPY text (batch.ORPHAN_COLUMNS)."""
    cdef Py_ssize_t n, slug_size, rule_size
    cdef const char* slug = entry.line(entry.click_line(click, entry.slug), &slug_size)
    cdef const char* rule
    cdef const char* space
    _put_id(orphans, entry.line(0, &n), entry.number + click)
    _put_char(orphans, b'\t')
    _put(orphans, when, 26)
    _put_char(orphans, b'\t')
    if _misread(slug, slug_size):
        _put_bytes(orphans, copy_text(_str(slug, slug_size).replace("\x00", "")).encode())
    else:
        _put(orphans, slug, slug_size)
    _put_char(orphans, b'\t')
    _put_item(orphans, ip, IP_TEXT)
    _put_char(orphans, b'\t')
    _put_item(orphans, agent, AGENT_ORPHAN_TEXT)
    _put_char(orphans, b'\t')
    _put_item(orphans, referer, REFERER_TEXT)
    _put_char(orphans, b'\t')
    if entry.old:
        _put(orphans, b"unknown\t", 8)
    else:
        # Its kind, a tab, and its domain's host (nothing for the default domain).
        rule = entry.line(entry.click_line(click, entry.rule), &rule_size)
        space = <const char*>memchr(rule, b' ', rule_size)
        if space == NULL:
            _put(orphans, rule, rule_size)
            _put_char(orphans, b'\t')
        else:
            _put(orphans, rule, space - rule)
            _put_char(orphans, b'\t')
            _put(orphans, space + 1, rule_size - (space - rule) - 1)
    return _put_char(orphans, b'\n')


cdef int _put_click(
    Buf* clicks,
    _Entry entry,
    Py_ssize_t click,
    const char* link,
    Py_ssize_t link_size,
    const char* rule,
    Py_ssize_t rule_size,
    object ip,
    Py_ssize_t ip_field,
    object agent,
    object referer,
) except -1:
    """A click: a row of binary COPY (batch.CLICK_COLUMNS), its address and
    country the ip row's `ip_field`."""
    cdef Py_ssize_t slug_size
    cdef const char* slug = entry.line(entry.click_line(click, entry.slug), &slug_size)
    if not clicks.size:
        _put(clicks, COPY_HEADER, 19)
    _put_be(clicks, CLICK_FIELDS, 2)
    _put_be(clicks, 16, 4)
    _put(clicks, entry.prefix, 8)
    _put_be(clicks, entry.number + click, 8)
    _put_be(clicks, 8, 4)
    _put_be(clicks, <uint64_t>((entry.times[click] - PG_EPOCH_MS) * 1000), 8)
    if _misread(slug, slug_size) and memchr(slug, 0, slug_size):
        kept = _str(slug, slug_size).replace("\x00", "").encode()
        _put_field(clicks, kept, len(kept))
    else:
        _put_field(clicks, slug, slug_size)
    _put_be(clicks, 8, 4)
    _put_be(clicks, _number(link, link_size), 8)
    _put_item(clicks, ip, ip_field)
    _put_item(clicks, agent, AGENT_BINARY)
    _put_item(clicks, referer, REFERER_BINARY)
    if rule_size:
        return _put_field(clicks, rule, rule_size)
    return _put_be(clicks, 0xFFFFFFFF, 4)  # NULL (-1): the link's own url
