# Counts a batch adds up for the rollups: a hash table of (link and hour, value) and the visitors (included by entries.pyx).


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



cdef struct Visitors:
    Visitor* items
    Py_ssize_t count, capacity


cdef inline int _add_visitor(Visitors* visitors, uint64_t place, int64_t hash) except -1:
    cdef Visitor* grown
    if visitors.count == visitors.capacity:
        visitors.capacity = max(visitors.capacity * 2, 1 << 12)
        grown = <Visitor*>realloc(visitors.items, visitors.capacity * sizeof(Visitor))
        if grown == NULL:
            raise MemoryError()
        visitors.items = grown
    visitors.items[visitors.count].place = place
    visitors.items[visitors.count].hash = hash
    visitors.count += 1
    return 0


cdef int _put_breakdown(Buf* out, Counts* counts, list links, list values, int64_t first_hour) except -1:
    """batch_breakdown's rows: link, hour, dimension, value, clicks, human clicks."""
    cdef Py_ssize_t i
    cdef Count* slot
    for i in range(counts.capacity):
        if not i & 0xFFF:
            _let_others_run()
        slot = &counts.slots[i]
        if slot.value:
            _put_bytes(out, links[slot.place >> HOUR_BITS])
            _put_char(out, b'\t')
            _put_int(out, first_hour + <int64_t>(slot.place & ((1 << HOUR_BITS) - 1)))
            _put_char(out, b'\t')
            _put_bytes(out, <object>PyList_GET_ITEM(values, slot.value - 1))
            _put_char(out, b'\t')
            _put_int(out, slot.clicks)
            _put_char(out, b'\t')
            _put_int(out, slot.human)
            _put_char(out, b'\n')
    return 0


cdef int _put_visitor_sets(Buf* out, Visitors* visitors, list links, int64_t first_hour) except -1:
    """batch_visitor_sets' rows: link, hour, bot, the distinct visitors."""
    cdef Py_ssize_t i
    cdef Visitor* items = visitors.items
    cdef uint64_t place
    with nogil:
        qsort(items, visitors.count, sizeof(Visitor), _by_visitor)
    for i in range(visitors.count):
        if not i & 0xFFF:
            _let_others_run()
        place = items[i].place
        if i and place == items[i - 1].place:
            if items[i].hash != items[i - 1].hash:
                _put_char(out, b',')
                _put_int(out, items[i].hash)
            continue
        if i:
            _put(out, b"}\n", 2)
        _put_bytes(out, links[place >> (HOUR_BITS + 1)])
        _put_char(out, b'\t')
        _put_int(out, first_hour + <int64_t>((place >> 1) & ((1 << HOUR_BITS) - 1)))
        _put(out, b"\tt\t{" if place & 1 else b"\tf\t{", 4)
        _put_int(out, items[i].hash)
    if visitors.count:
        _put(out, b"}\n", 2)
    return 0


@cython.final
cdef class _Tally:
    """What a batch counts for the rollups (batch_breakdown,
    batch_visitor_sets): a count of each link, hour and value, and each
    click's visitor. `rules` and `rule_value` are batch.BatchMaker's (a rule
    to its value id); `values` holds each value id's COPY text."""

    cdef dict places  # the batch's link ids, to their places in `links`
    cdef list links
    cdef dict ip_storage  # RowMaker's
    cdef int ip_default
    cdef dict ip_chosen  # the batch's links in ip_storage, with their codes: batch.Batch.ip_storage
    cdef unsigned char* ip_codes  # each place's code of enrichment.IP_STORAGE_CODES
    cdef Py_ssize_t ip_codes_capacity
    cdef dict rules
    cdef object rule_value
    cdef list values
    cdef int64_t first_hour
    cdef Counts counts
    cdef Visitors visitors

    def __dealloc__(self):
        free(self.counts.slots)
        free(self.visitors.items)
        free(self.ip_codes)

    cdef Py_ssize_t place_of(self, const char* link, Py_ssize_t link_size) except -1:
        """The link's place in the batch, and in `ip_codes` its code, the first time."""
        cdef PyObject* found
        cdef unsigned char* grown
        cdef Py_ssize_t place
        key = PyLong_FromUnsignedLongLong(_number(link, link_size))
        found = PyDict_GetItem(self.places, key)
        if found != NULL:
            return PyLong_AsLongLong(found)
        place = len(self.links)
        self.places[key] = place
        self.links.append(link[:link_size])
        if place == self.ip_codes_capacity:
            self.ip_codes_capacity = max(2 * place, 1024)
            grown = <unsigned char*>realloc(self.ip_codes, self.ip_codes_capacity)
            if grown == NULL:
                raise MemoryError()
            self.ip_codes = grown
        found = PyDict_GetItem(self.ip_storage, key)
        if found == NULL:
            self.ip_codes[place] = self.ip_default
        else:
            self.ip_codes[place] = <unsigned char>PyLong_AsLongLong(found)
            self.ip_chosen[key] = <object>found
        return place

    cdef int add(
        self,
        int64_t ms,
        Py_ssize_t link_place,
        const char* rule,
        Py_ssize_t rule_size,
        object ip,
        object agent,
        object referer,
    ) except -1:
        """A click's counts, one a dimension, and its visitor; `link_place` from place_of."""
        cdef uint64_t place = <uint64_t>link_place << HOUR_BITS | <uint64_t>(ms // HOUR_MS - self.first_hour)
        cdef PyObject* found
        cdef int64_t bot = _int(agent, AGENT_BOT)
        cdef int64_t human = 1 - bot
        _count(&self.counts, place, _int(agent, AGENT_BROWSER) + 1, 1, human)
        _count(&self.counts, place, _int(agent, AGENT_OS) + 1, 1, human)
        _count(&self.counts, place, _int(agent, AGENT_DEVICE) + 1, 1, human)
        _count(&self.counts, place, _int(referer, REFERER_HOST) + 1, 1, human)
        _count(&self.counts, place, _int(ip, IP_COUNTRY) + 1, 1, human)
        if rule_size:
            found = PyDict_GetItem(self.rules, rule[:rule_size])
            if found == NULL:
                made = self.rule_value(_str(rule, rule_size))
                self.rules[rule[:rule_size]] = made
                found = <PyObject*>made
            _count(&self.counts, place, PyLong_AsLongLong(found) + 1, 1, human)
        # A visitor is the anonymised network and the user agent
        # (docs/rollups.md): the halves are hashed with different keys, so
        # their XOR is as good as a hash of the pair.
        return _add_visitor(&self.visitors, place << 1 | bot, _hash(ip, IP_HASH) ^ _hash(agent, AGENT_HASH))

    cdef int put_rows(self, batch) except -1:
        """The batch's rows of batch_breakdown and batch_visitor_sets, its
        link ids, and those of its links whose addresses are kept as their team chose."""
        cdef Buf out
        memset(&out, 0, sizeof(Buf))
        try:
            batch.link_ids = set(self.places)
            batch.ip_storage = self.ip_chosen
            _put_breakdown(&out, &self.counts, self.links, self.values, self.first_hour)
            batch.breakdown_rows = _take(&out)
            _put_visitor_sets(&out, &self.visitors, self.links, self.first_hour)
            batch.visitor_rows = _take(&out)
        finally:
            free(out.data)
        return 0


cdef _Tally _tally(
    dict rules, object rule_value, list values, int64_t first_hour, dict ip_storage, int ip_default
):
    cdef _Tally tally = _Tally.__new__(_Tally)
    tally.places, tally.links, tally.first_hour = {}, [], first_hour
    tally.rules, tally.rule_value, tally.values = rules, rule_value, values
    tally.ip_storage, tally.ip_default, tally.ip_chosen = ip_storage, ip_default, {}
    return tally
