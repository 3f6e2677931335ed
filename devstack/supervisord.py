"""supervisord, as the runner starts it (`python -m devstack.supervisord -c
devstack/supervisord.conf`): supervisor's own, writing to the terminal
until it has gone and then nowhere (devstack/terminal.py), so that it
still stops every program in order."""

import sys

from supervisor.supervisord import main

from devstack.terminal import keep_writing

if __name__ == "__main__":
    keep_writing()
    sys.exit(main())
