"""devstack.net.free_port: a port is given to one living process only, so
that no two servers of the tests' processes (several pytest workers, the
edge listening with reuseport) ever share one."""

import subprocess
import sys

from devstack.net import PORT_CLAIMS, _claim, free_port

_CLAIMER = "from devstack.net import free_port; print(free_port(), flush=True); input()"


def test_a_port_stays_its_process_until_that_process_ends():
    claimer = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(claimer.stdout.readline())
        claim = PORT_CLAIMS / str(port)
        assert claim.read_text() == str(claimer.pid)
        assert not _claim(claim), "the port of a living process was given again"
    finally:
        claimer.communicate("")
    assert _claim(claim), "the port of a process that ended was not taken over"
    claim.unlink()


def test_this_process_is_never_given_one_port_twice():
    ports = [free_port() for _ in range(200)]
    assert len(set(ports)) == len(ports)
    for port in ports:
        (PORT_CLAIMS / str(port)).unlink()
