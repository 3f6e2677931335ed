"""`python -m devstack.django_steps ANSWER_FD`: the part of `make run`'s
one-time work (devstack/stack.py, set_up_database) that runs inside
Django, in one process: the migration history checked
(devstack/migration_history.py), `migrate`, `collectstatic` and
`ensure_admin`. Django starts once, where four processes each started it.

What the runner must read rather than show goes to the file descriptor
ANSWER_FD: the foreign migrations, one a line, with exit status 2; else
what ensure_admin said (a one-time password, which the runner keeps for
its banner). The rest is the commands' own output, as they print it.
"""

import os
import sys

import django
from django.core.management import call_command
from django.core.management.base import CommandError

from devstack.migration_history import DASHBOARD, foreign_migrations

EXIT_FAILED, EXIT_FOREIGN_HISTORY = 1, 2
# Django's system checks run in migrate: the next two skip them.
STEPS = (
    ("migrate", {"interactive": False, "verbosity": 1}),
    ("collectstatic", {"interactive": False, "verbosity": 0, "skip_checks": True}),
)


def main(answer_fd: int) -> int:
    # django-axes names its lockout rule once, here, rather than in every process (settings.py).
    os.environ["AXES_BANNER"] = "1"
    django.setup()
    with os.fdopen(answer_fd, "w") as answer:
        unknown = foreign_migrations()
        if unknown:
            answer.write("".join(f"{line}\n" for line in unknown))
            return EXIT_FOREIGN_HISTORY
        # Its name and password come from SLINGSHOT_ADMIN_USER and
        # SLINGSHOT_ADMIN_PASSWORD in the environment, never from arguments.
        for name, options in (*STEPS, ("ensure_admin", {"skip_checks": True, "stdout": answer})):
            try:
                call_command(name, **options)
            except CommandError as exc:
                print(f"manage.py {name}: {exc}", file=sys.stderr)
                return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(DASHBOARD))
    sys.exit(main(int(sys.argv[1])))
