from django.core.management.base import BaseCommand

from clicks.clickhouse_clicks import using_clickhouse
from clicks.retention import visits_purge


class Command(BaseCommand):
    help = (
        "Delete each team's visits past its retention now, as import_clicks does every CLICK_PURGE_EVERY_MINUTES "
        "(the rollups too with CLICK_RETENTION_ROLLUPS=purge); safe beside a running importer."
    )

    def handle(self, *args, **options):
        run = visits_purge()
        # ClickHouse's replicas carry out the mutations a purge sends in their own time.
        deleted = "sent to ClickHouse's replicas to delete" if using_clickhouse() else "deleted"
        for purge in run.purges:
            self.stdout.write(
                f"team {purge.team_id}: {purge.clicks} clicks before {purge.cutoff:%Y-%m-%d} {deleted}, "
                f"{purge.rollup_rows} rows of rollups"
            )
        self.stdout.write(f"purged {len(run.purges)} team{'' if len(run.purges) == 1 else 's'}")
