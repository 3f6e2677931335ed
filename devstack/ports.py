"""The ports of a `make run` stack: which ones it uses, and what to do when
another program has one.

A run directory keeps the ports it was made with (its env file), so that a
second `make run` serves the short URLs of the first where they were. A
port given in the environment still wins, and `make run` says so; the run
directory then keeps the new one.
"""

import socket

from devstack.programs import PORT_DEFAULTS

# The highest port a suggestion goes up to before it gives up on a port.
_SEARCH = 200


def chosen(environment: dict[str, str], remembered: dict[str, str]) -> tuple[dict[str, int], list[str]]:
    """Each port of PORT_DEFAULTS: the environment's, else the one the run
    directory remembers, else the default; and a note for each port the
    environment changes from the remembered one."""
    ports, notes = {}, []
    for name, default in PORT_DEFAULTS.items():
        given, kept = environment.get(name), remembered.get(name)
        ports[name] = int(given or kept or default)
        if given and kept and int(given) != int(kept):
            notes.append(f"{name}={given} from the environment, in place of {kept} that the run directory had")
    return ports, notes


def busy(ports: dict[str, int]) -> list[str]:
    """The names of the ports that another program listens on."""
    return [name for name, number in ports.items() if not _free(number)]


def _free(number: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", number))
        except OSError:
            return False
    return True


def free_instead(ports: dict[str, int], taken: list[str]) -> dict[str, int]:
    """For each taken port, the next free one above it that none of the
    other ports uses."""
    using = set(ports.values())
    replacements = {}
    for name in taken:
        for number in range(ports[name] + 1, min(ports[name] + _SEARCH, 65536)):
            if number not in using and _free(number):
                replacements[name] = number
                using.add(number)
                break
    return replacements


def clash_message(ports: dict[str, int], taken: list[str], *, command: str = "make run") -> str:
    """Every busy port, and `command` (the one that was run) on free ones."""
    listed = ", ".join(f"{name}={ports[name]}" for name in taken)
    instead = free_instead(ports, taken)
    assignments = " ".join(f"{name}={number}" for name, number in instead.items())
    return (
        f"in use by another program: {listed}. Stop that program, or start on free ports with\n"
        f"    {assignments} {command}\n"
        "  (the run directory remembers them for the next `make run`)"
    )
