# The text a batch writes: a growing buffer of bytes, and the values put in it (included by entries.pyx).


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

