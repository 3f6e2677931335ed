"""The runner's own parts, without a stack (tests/test_stack.py runs whole stacks)."""

import os
import subprocess
import sys

import devstack
from devstack.supervision import SUPERVISORD, left_programs
from devstack.terminal import LastingOutput

# A child as supervisord's fork for a program is at first: supervisord's
# command line, its own process group, and no SUPERVISOR_PROCESS_NAME; its
# exec, here 0.5 s later, brings the program and the name.
FORK = """
import os, sys, time
os.setpgrp()
time.sleep(0.5)
environment = {**os.environ, "SUPERVISOR_PROCESS_NAME": "webhooks"}
os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)"], environment)
"""


def test_a_program_supervisord_forked_as_it_died_is_found_once_it_has_started():
    fork = subprocess.Popen([sys.executable, "-c", FORK, "-m", SUPERVISORD])
    try:
        assert left_programs({}) == {"webhooks": fork.pid}
        assert SUPERVISORD.encode() not in open(f"/proc/{fork.pid}/cmdline", "rb").read()
    finally:
        fork.kill()
        fork.wait()


def test_a_program_is_taken_from_supervisords_last_answer_when_its_environment_does_not_name_it():
    program = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgrp(); time.sleep(60)"])
    try:
        assert left_programs({"redis": program.pid, "gone": 2**22 + 1}) == {"redis": program.pid}
    finally:
        program.kill()
        program.wait()
    assert os.getpid() not in left_programs({"me": os.getpid()}).values()


# As the runner: a subreaper with supervisord (here a sleep) as its child,
# and a program's master orphaned by its keep_group, adopted, then exited.
# reap_adopted collects the master and leaves supervisord's exit to Popen,
# alive or not.
REAPER = """
import os, subprocess, sys, time
from devstack.processes import become_subreaper
from devstack.supervision import reap_adopted
become_subreaper()
supervisord = subprocess.Popen(["sleep", "60"])
keep_group = subprocess.Popen(
    [sys.executable, "-c", "import subprocess; print(subprocess.Popen(['sleep', '0.3']).pid, flush=True)"],
    stdout=subprocess.PIPE, text=True,
)
master = int(keep_group.stdout.readline())
keep_group.wait()
time.sleep(1)
assert open(f"/proc/{master}/stat").read().split(") ")[1][0] == "Z", "adopted and exited"
reap_adopted(supervisord.pid)
assert not os.path.exists(f"/proc/{master}"), "collected"
assert supervisord.poll() is None
supervisord.terminate()
time.sleep(0.5)
reap_adopted(supervisord.pid)
assert supervisord.wait(timeout=5) == -15, "its status, left to Popen"
print("ok")
"""


def test_the_runner_collects_what_it_adopted_and_leaves_supervisord_to_popen():
    done = subprocess.run([sys.executable, "-c", REAPER], cwd=devstack.REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout == "ok\n", done.stderr


def test_output_whose_terminal_has_gone_is_dropped_from_then_on_without_an_error():
    read, write = os.pipe()
    stream = os.fdopen(write, "w")
    os.close(read)  # as a terminal that has gone: each write fails (EPIPE here, EIO there)
    out = LastingOutput(stream)
    out.write("a line\n")
    out.flush()
    assert out.lost
    assert os.readlink(f"/proc/self/fd/{write}") == "/dev/null"  # what the stream still buffers goes there
    assert out.write(b"bytes, as supervisord's logger writes them\n") == 43
    print("and a print", file=out, flush=True)
    stream.close()
