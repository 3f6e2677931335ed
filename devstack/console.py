"""`python -m devstack console`: supervisord's event listener that makes
`make run` one readable stream.

supervisord hands it every line a program writes (PROCESS_LOG events, while
the same lines go to the program's own file under the run directory's
logs/) and every change of a program's state. It prints each line with the
program's name in front, and a loud line when a program exits without being
asked to or when supervisord gives up on it (FATAL), naming its log file.
Its stdout is the event protocol; what it prints goes to stderr, which
supervisord.conf sends to supervisord's own stdout: the terminal.
"""

import os
import signal
import sys
import time
from collections import defaultdict, deque

LOUD = "!" * 8
CRASH_WINDOW = 60.0  # seconds over which unexpected exits are counted


class Console:
    def __init__(self, *, out, logs_dir: str, width: int = 10) -> None:
        self.out = out
        self.logs_dir = logs_dir
        self.width = width
        self.partial: dict[tuple[str, str], bytes] = {}
        self.exits: dict[str, deque] = defaultdict(deque)

    def line(self, name: str, text: str) -> None:
        self.out.write(f"{time.strftime('%H:%M:%S')} {name:<{self.width}} | {text}\n")

    def log_file(self, name: str) -> str:
        return os.path.join(self.logs_dir, f"{name}.log")

    def output(self, name: str, channel: str, data: bytes) -> None:
        """Prints the complete lines of `data`; a line cut between two events
        (perhaps inside a UTF-8 character) waits for its end."""
        key = (name, channel)
        *lines, rest = (self.partial.pop(key, b"") + data).split(b"\n")
        for line in lines:
            self.line(name, line.rstrip(b"\r").decode(errors="replace"))
        if rest:
            self.partial[key] = rest

    def flush_partial(self, name: str) -> None:
        for key in [k for k in self.partial if k[0] == name]:
            self.line(name, self.partial.pop(key).decode(errors="replace"))

    def state(self, event: str, headers: dict[str, str]) -> None:
        name = headers.get("processname", "?")
        if event == "PROCESS_STATE_EXITED":
            self.flush_partial(name)
            if headers.get("expected") == "0":
                now = time.monotonic()
                exits = self.exits[name]
                exits.append(now)
                while exits and now - exits[0] > CRASH_WINDOW:
                    exits.popleft()
                self.line(
                    "supervisor",
                    f"{LOUD} {name} (pid {headers.get('pid')}) exited unexpectedly "
                    f"({len(exits)} time(s) in the last {CRASH_WINDOW:.0f}s); supervisord starts it again. "
                    f"Its log: {self.log_file(name)}",
                )
        elif event == "PROCESS_STATE_BACKOFF":
            self.flush_partial(name)
            self.line(
                "supervisor",
                f"{LOUD} {name} failed to start (attempt {headers.get('tries')}); "
                f"supervisord tries again after a pause. Its log: {self.log_file(name)}",
            )
        elif event == "PROCESS_STATE_FATAL":
            self.flush_partial(name)
            self.line(
                "supervisor",
                f"{LOUD} {name} is FATAL: it kept failing to start and supervisord gave up on "
                f"it. Its log: {self.log_file(name)}. Once the cause is fixed: "
                f"make ctl ARGS='start {name}'",
            )


def tokens(line: bytes) -> dict[str, str]:
    """`name:value name:value` headers of the event protocol."""
    return dict(token.split(":", 1) for token in line.decode(errors="replace").split())


def main() -> None:
    """The event listener protocol (supervisor's docs, "Events"), on bytes:
    an event's `len` counts bytes, and a program's output need not be text."""
    console = Console(out=sys.stderr, logs_dir=os.path.join(os.environ["SLINGSHOT_RUN_DIR"], "logs"))
    # supervisord stops the console last (priority=1), after the lines of every other program.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    events, replies = sys.stdin.buffer, sys.stdout.buffer
    while True:
        replies.write(b"READY\n")
        replies.flush()
        header_line = events.readline()
        if not header_line:
            return  # supervisord has gone
        headers = tokens(header_line)
        payload = events.read(int(headers["len"]))
        event = headers["eventname"]
        if event.startswith("PROCESS_LOG"):
            details, data = payload.split(b"\n", 1)
            details = tokens(details)
            console.output(details["processname"], details["channel"], data)
        elif event.startswith("PROCESS_STATE"):
            console.state(event, tokens(payload))
        sys.stderr.flush()
        replies.write(b"RESULT 2\nOK")
        replies.flush()
