"""`python -m devstack COMMAND`.

    run                 the local stack in the foreground (`make run`; devstack/stack.py)
    prepare             only its one-time work: run directory, database, migrations, admin user
    ctl ARGS...         supervisorctl for the running stack (`make status`, `make ctl ARGS=...`)
    backup [--to DIR] [--stop-edge]
                        a backup of the stack's data and SECRET_KEY (`make backup`; devstack/backup.py)
    restore DIR         a run directory made from a backup (`make restore BACKUP=DIR`; devstack/restore.py)
    postgres, redis, edge, dashboard, importer, publisher, imports
                        one program of the stack, as supervisord runs it (devstack/programs.py)
    console             supervisord's event listener that prints the programs' output (devstack/console.py)

The run directory is SLINGSHOT_RUN_DIR (default .run/); ports come from
DASHBOARD_PORT, EDGE_PORT, EDGE_TLS_PORT, POSTGRES_PORT and REDIS_PORT, and
the run directory remembers them (devstack/ports.py).
"""

import sys

from devstack.programs import PROGRAMS

COMMANDS = ("run", "prepare", "ctl", "backup", "restore", "console", *PROGRAMS)
# The commands that take arguments of their own.
WITH_ARGUMENTS = ("ctl", "backup", "restore")


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS or (argv[0] not in WITH_ARGUMENTS and len(argv) > 1):
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
    if command == "backup":
        from devstack import backup

        return backup.main_backup(args)
    if command == "restore":
        from devstack import restore

        return restore.main_restore(args)
    console.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
