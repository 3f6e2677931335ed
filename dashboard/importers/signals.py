"""What imports tell the apps above them. `import_finished` is sent as a
job that was not a dry run ends (done or failed), in the transaction that
marks it so, with `team_id` and `summary` (jobs.finished_summary)."""

from django.dispatch import Signal

import_finished = Signal()
