"""Orphan visits of two more kinds: `limit` (a link past its max_visits)
and `password` (a view of a link's password page). For the lead to fold
into the release (sql/clicks.sql's CHECK and a migration that is kept)."""

from django.db import migrations

KINDS = ("unknown", "disabled", "scheduled", "expired", "limit", "password")
BEFORE = ("unknown", "disabled", "scheduled", "expired")


def check(kinds: tuple[str, ...]) -> str:
    listed = ", ".join(f"'{kind}'" for kind in kinds)
    return (
        "ALTER TABLE orphan_visits DROP CONSTRAINT orphan_visits_kind_check, "
        f"ADD CONSTRAINT orphan_visits_kind_check CHECK (kind IN ({listed}))"
    )


class Migration(migrations.Migration):
    dependencies = [("clicks", "0001_initial")]

    operations = [migrations.RunSQL(check(KINDS), reverse_sql=check(BEFORE))]
