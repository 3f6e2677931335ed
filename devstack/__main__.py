"""`python -m devstack COMMAND`.

    run                 the local stack in the foreground (`make run`; devstack/stack.py)
    prepare             only its one-time work: run directory, database, migrations, admin user
    ctl ARGS...         supervisorctl for the running stack (`make status`, `make ctl ARGS=...`)
    postgres, redis, edge, dashboard, importer, publisher, imports
                        one program of the stack, as supervisord runs it (devstack/programs.py)
    console             supervisord's event listener that prints the programs' output (devstack/console.py)

The run directory is SLINGSHOT_RUN_DIR (default .run/); ports come from
DASHBOARD_PORT, EDGE_PORT, EDGE_TLS_PORT, POSTGRES_PORT and REDIS_PORT, and
the run directory remembers them (devstack/ports.py).
"""

import sys

from devstack.programs import PROGRAMS

COMMANDS = ("run", "prepare", "ctl", "console", *PROGRAMS)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS or (argv[0] != "ctl" and len(argv) > 1):
        print(f"usage: python -m devstack {{{'|'.join(COMMANDS)}}}", file=sys.stderr)
        return 2
    command, args = argv[0], argv[1:]
    if command in PROGRAMS:
        PROGRAMS[command]()
        return 0
    from devstack import console, stack

    if command == "run":
        return stack.main_run()
    if command == "prepare":
        return stack.main_prepare()
    if command == "ctl":
        return stack.main_ctl(args)
    console.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
