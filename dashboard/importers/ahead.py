"""An iterator's next item made in a thread of its own while the caller
works on the one before: the import reads and makes a batch of visits
(Python) while the batch before is stored (PostgreSQL, which psycopg waits
for without holding the GIL), as the click importer's reader thread does
(clicks/importer.py)."""

import threading
from collections.abc import Iterator
from queue import Full, Queue
from typing import TypeVar

from django.db import connections

T = TypeVar("T")
_END = object()


class _Failed:
    def __init__(self, exc: BaseException):
        self.exc = exc


def ahead(items: Iterator[T], depth: int = 1) -> Iterator[T]:
    """The items of `items`, each made in a thread while the caller has the
    one before; at most `depth` waiting. An exception raised making one is
    raised here, in its place. The thread stops when the caller does."""
    queue: Queue = Queue(maxsize=depth)
    stop = threading.Event()

    def fill() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        queue.put(item, timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put(_END)
        except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
            queue.put(_Failed(exc))
        finally:
            # Reading a file the Import page stored opens this thread's own
            # session: it ends with the thread, not with the worker.
            connections.close_all()

    thread = threading.Thread(target=fill, name="import-ahead", daemon=True)
    thread.start()
    try:
        while (item := queue.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()
        while thread.is_alive():
            while not queue.empty():
                queue.get_nowait()
            thread.join(timeout=0.1)
