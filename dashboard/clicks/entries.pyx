# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Click entries of the stream to the rows the importer copies, in C: the
importer's hot loop (docs/benchmarks.md, the importer). Built by `make
setup` (bin/setup, Cython).

`decode_entry` reads an entry's clicks as records.py describes; `RowMaker`
reads whole batches of entries with the same checks and writes their COPY
text straight from the entry's bytes. What a row needs of an address, a user
agent, a referrer or a rule is asked of batch.BatchMaker once per value and
kept by the entry's bytes: a click costs a few dict lookups and memcpy.

One module in C, its jobs in the files it includes, in the order the data
flows: entry_lines.pxi (an entry's lines, checked), copy_buffer.pxi (the
text a batch writes), batch_rows.pxi (a click's rows), rollup_counts.pxi
(what a batch counts for the rollups). Included rather than cimported, so
that their small helpers stay inline in the hot loop.
"""

import re

cimport cython

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
# A click's lines by record format, in order (slingshot/click_record.toml):
# _read finds each line at the place they give it (entry_lines.pxi, _PLACES).
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


include "entry_lines.pxi"
include "copy_buffer.pxi"
include "batch_rows.pxi"
include "rollup_counts.pxi"


cdef list _good_entries(list entries, batch, int64_t min_ms, int64_t max_ms):
    """The entries to store: each one acknowledged; those that break the
    contract or whose times are out of range go to the batch's dead letters."""
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
    if good:
        batch.first_ms, batch.last_ms = first_ms, last_ms
    return good


@cython.final
cdef class RowMaker:
    """Writes a batch's rows (batch.Batch) from its entries. Its caches are
    batch.BatchMaker's: raw address, user agent and referrer (the entry's
    bytes) to the row made of it, and a rule to its value id; `values`
    holds each value id's COPY text of (dimension, value). A click keeps
    its address as `ip_storage` says for its link (link id to a code of
    enrichment.IP_STORAGE_CODES), else as `ip_default`. With
    `visitors_per_click`, the batch also carries each click's visitor hash,
    in the order of its rows (a click store that rolls up itself needs them)."""

    cdef dict ips, agents, referers, rules, ip_storage
    cdef list values
    cdef object ip_row, agent_row, referer_row, rule_value
    cdef int ip_default
    cdef public bint visitors_per_click

    def __init__(
        self,
        dict ips,
        dict agents,
        dict referers,
        dict rules,
        list values,
        ip_row,
        agent_row,
        referer_row,
        rule_value,
        dict ip_storage,
        int ip_default,
    ):
        self.ips, self.agents, self.referers, self.rules, self.values = ips, agents, referers, rules, values
        self.ip_row, self.agent_row, self.referer_row, self.rule_value = ip_row, agent_row, referer_row, rule_value
        self.ip_storage, self.ip_default = ip_storage, ip_default

    def make(self, list entries, batch, int64_t min_ms, int64_t max_ms):
        """Fills `batch` from these entries: what batch.BatchMaker.make promises."""
        cdef list good = _good_entries(entries, batch, min_ms, max_ms)
        if not good:
            return
        cdef _Tally tally = _tally(
            self.rules, self.rule_value, self.values, min_ms // HOUR_MS, self.ip_storage, self.ip_default
        )
        cdef Buf clicks, orphans, visitors
        memset(&clicks, 0, sizeof(Buf))
        memset(&orphans, 0, sizeof(Buf))
        memset(&visitors, 0, sizeof(Buf))
        try:
            self._write(good, batch, &clicks, &orphans, &visitors, tally)
            if clicks.size:
                _put_be(&clicks, 0xFFFF, 2)  # the binary COPY's trailer (-1)
            batch.click_rows, batch.orphan_rows = _take(&clicks), _take(&orphans)
            if self.visitors_per_click:
                batch.click_visitors = _take(&visitors)
        finally:
            free(clicks.data)
            free(orphans.data)
            free(visitors.data)
        tally.put_rows(batch)

    cdef int _write(self, list good, batch, Buf* clicks, Buf* orphans, Buf* visitors, _Tally tally) except -1:
        """Each click's row, and its counts; the batch's numbers of clicks and orphan visits."""
        cdef dict ips = self.ips, agents = self.agents, referers = self.referers, batch_agents = batch.agents
        cdef _Entry entry
        cdef Py_ssize_t click, n, link_size, rule_size, place, served = 0, orphan_count = 0
        cdef const char* link
        cdef const char* rule
        cdef When when
        _start_when(&when)
        cdef object ip, agent, referer, last_agent = None
        cdef int64_t visitor
        cdef bint per_click = self.visitors_per_click
        for entry in good:
            _let_others_run()
            for click in range(entry.count):
                ip = _look_up(ips, entry.line(entry.click_line(click, entry.ip), &n), n, self.ip_row)
                agent = _look_up(agents, entry.line(entry.click_line(click, entry.ua), &n), n, self.agent_row)
                referer = _look_up(referers, entry.line(entry.click_line(click, entry.ref), &n), n, self.referer_row)
                if agent is not last_agent:
                    # user_agents: the agent's id and the agent as stored.
                    PyDict_SetItem(batch_agents, <object>PyTuple_GET_ITEM(agent, AGENT_ID), <object>PyTuple_GET_ITEM(agent, AGENT_STORED))
                    last_agent = agent
                link = entry.line(entry.click_line(click, entry.link), &link_size)
                if not link_size:
                    orphan_count += 1
                    _put_orphan(orphans, entry, click, _when(&when, entry.times[click]), ip, agent, referer)
                    continue
                if entry.rule >= 0:
                    rule = entry.line(entry.click_line(click, entry.rule), &rule_size)
                else:
                    rule, rule_size = b"", 0
                served += 1
                place = tally.place_of(link, link_size)
                _put_click(
                    clicks, entry, click, link, link_size, rule, rule_size, ip, IP_BINARY + tally.ip_codes[place],
                    agent, referer
                )
                tally.add(entry.times[click], place, rule, rule_size, ip, agent, referer)
                if per_click:
                    visitor = _hash(ip, IP_HASH) ^ _hash(agent, AGENT_HASH)
                    _put(visitors, <const char*>&visitor, 8)
        batch.clicks, batch.orphans = served, orphan_count
        return 0
