"""Files given to an import from the Import page, kept in the database in
parts (ImportFile) until the job ends, so that whichever host works the job
reads them; and files the command names, read where they are."""

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from .models import ImportFile, ImportJob

PART = 4 * 1024 * 1024

Opener = Callable[[], BinaryIO]  # opens a file from its start, for each pass over it


def files_store(job: ImportJob, named: dict[str, Iterable[bytes]]) -> None:
    """Stores each named file (its content in chunks) as parts of the job,
    and their ranges in job.options["files"]."""
    ranges, part = {}, 0
    for name, chunks in named.items():
        first, buffer = part, bytearray()
        for chunk in chunks:
            buffer += chunk
            while len(buffer) >= PART:
                ImportFile.objects.create(job=job, part=part, data=bytes(buffer[:PART]))
                del buffer[:PART]
                part += 1
        if buffer or part == first:
            ImportFile.objects.create(job=job, part=part, data=bytes(buffer))
            part += 1
        ranges[name] = [first, part]
    job.options = {**job.options, "files": ranges}
    job.save(update_fields=["options"])


class _Parts(io.RawIOBase):
    """The parts [first, end) of a job's file, read one at a time."""

    def __init__(self, job_id: int, first: int, end: int):
        self.job_id, self.next, self.end = job_id, first, end
        self.buffer = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, target) -> int:
        while not self.buffer and self.next < self.end:
            data = ImportFile.objects.filter(job_id=self.job_id, part=self.next).values_list("data", flat=True).get()
            self.buffer, self.next = memoryview(bytes(data)), self.next + 1
        size = min(len(target), len(self.buffer))
        target[:size] = self.buffer[:size]
        self.buffer = self.buffer[size:]
        return size


def stored_opener(job: ImportJob, name: str) -> Opener | None:
    if name not in job.options.get("files", {}):
        return None
    first, end = job.options["files"][name]
    return lambda: io.BufferedReader(_Parts(job.pk, first, end), buffer_size=1024 * 1024)


def path_opener(path: str | None) -> Opener | None:
    if not path:
        return None
    return lambda: Path(path).open("rb")


def files_forget(job: ImportJob) -> None:
    ImportFile.objects.filter(job=job).delete()
