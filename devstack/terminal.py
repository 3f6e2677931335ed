"""Output that outlives the terminal: `make run`'s runner and its supervisord
write to the terminal they were started on, and keep running, silent, once
it has gone (a closed window, a dropped SSH session, a test's driver that
died). A write that fails there would otherwise raise where nothing
expects it: in supervisord's logger, whose error handler writes the
traceback to the same terminal and raises again, out of its main loop, and
supervisord died without stopping a program, leaving the whole stack up.

`python -m devstack.supervisord` is supervisord with this output."""

import io
import os
import sys


class LastingOutput(io.TextIOBase):
    """A text stream over `stream` that, from its first failed write or
    flush, writes nowhere. Text, and bytes too (supervisord's logger writes
    bytes to a stream it does not take for text)."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.stream = stream
        self.lost = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return not self.lost and self.stream.isatty()

    def write(self, text) -> int:
        if not self.lost:
            try:
                if isinstance(text, bytes):
                    self.stream.buffer.write(text)
                else:
                    self.stream.write(text)
            except OSError:
                self._lose()
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            try:
                self.stream.flush()
            except OSError:
                self._lose()

    def _lose(self) -> None:
        self.lost = True
        # What the stream still buffers would fail again as it is closed.
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.stream.fileno())
        finally:
            os.close(devnull)


def keep_writing() -> None:
    """sys.stdout and sys.stderr as LastingOutput, for the rest of the process."""
    if not isinstance(sys.stdout, LastingOutput):
        sys.stdout = LastingOutput(sys.stdout)
    if not isinstance(sys.stderr, LastingOutput):
        sys.stderr = LastingOutput(sys.stderr)
