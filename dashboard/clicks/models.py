from django.db import models

from links.models import Link


class Click(models.Model):
    """A row of the partitioned `clicks` table (sql/001_clicks.sql), which the
    importer fills; Django only reads it."""

    click_id = models.UUIDField(primary_key=True)
    occurred_at = models.DateTimeField()
    link = models.ForeignKey(Link, null=True, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    slug = models.CharField(max_length=64)
    ip = models.GenericIPAddressField(null=True)
    user_agent = models.TextField()
    referer = models.TextField()

    class Meta:
        managed = False
        db_table = "clicks"
        ordering = ["-occurred_at"]

    def __str__(self) -> str:
        return f"{self.slug} at {self.occurred_at:%Y-%m-%d %H:%M:%S}"
