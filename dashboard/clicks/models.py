from django.db import models

from links.models import Link


class UserAgent(models.Model):
    """A user agent seen in clicks, stored once under a hash of itself
    (sql/clicks.sql); the importer adds them."""

    id = models.BigIntegerField(primary_key=True)
    user_agent = models.TextField()

    class Meta:
        managed = False
        db_table = "user_agents"

    def __str__(self) -> str:
        return self.user_agent


class Click(models.Model):
    """A row of the partitioned `clicks` table (sql/clicks.sql), which the
    importer fills; Django only reads it."""

    click_id = models.UUIDField(primary_key=True)
    occurred_at = models.DateTimeField()
    link = models.ForeignKey(Link, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    slug = models.CharField(max_length=64)
    ip = models.GenericIPAddressField(null=True)
    agent = models.ForeignKey(
        UserAgent, on_delete=models.DO_NOTHING, db_column="user_agent_id", db_constraint=False, related_name="+"
    )
    referer = models.TextField()
    # Worked out at import (clicks/enrichment.py).
    is_bot = models.BooleanField()
    browser = models.TextField()
    os = models.TextField()
    device = models.TextField()
    country = models.TextField()
    referer_host = models.TextField()
    # What served it (docs/contract.md): "1".."n" a rule, "ab1".."abn" a split's destination, None the link's url.
    rule = models.TextField(null=True)  # noqa: DJ001 (NULL, no byte, for the many clicks no rule served)

    class Meta:
        managed = False
        db_table = "clicks"
        ordering = ["-occurred_at"]

    def __str__(self) -> str:
        return f"{self.slug} at {self.occurred_at:%Y-%m-%d %H:%M:%S}"

    @property
    def user_agent(self) -> str:
        return self.agent.user_agent


class LinkClickTotals(models.Model):
    """A link's all-time clicks (sql/rollups.sql), kept by the importer."""

    link = models.OneToOneField(
        Link, primary_key=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="click_totals"
    )
    clicks = models.BigIntegerField()
    human_clicks = models.BigIntegerField()

    class Meta:
        managed = False
        db_table = "link_click_totals"

    def __str__(self) -> str:
        return f"{self.link_id}: {self.clicks} clicks"
