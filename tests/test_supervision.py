"""The runner's own parts, without a stack (tests/test_stack.py runs whole stacks)."""

import os
import subprocess
import sys

from devstack.supervision import SUPERVISORD, left_programs

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
