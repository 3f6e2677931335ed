from django.db import models
from django.db.models import Count, Max


class ScreenListQuerySet(models.QuerySet):
    def version(self):
        """What changes whenever a list is stored again or goes: the newest
        change and how many lists there are."""
        found = self.aggregate(newest=Max("changed_at"), lists=Count("id"))
        return (found["newest"], found["lists"])


class ScreenList(models.Model):
    """A blocklist of SCREEN_LISTS, or an allowlist of SCREEN_ALLOWLIST, as
    the refresher last read it (screening/services.py): its domains and URLs
    as screening/screen.py looks them up, sorted 64-bit hashes. A list that
    could not be read keeps what it held, with the error. Its table is in
    sql/screening.sql."""

    name = models.CharField(max_length=200)
    allow = models.BooleanField(default=False)
    source = models.TextField()
    domains = models.BinaryField(default=b"")
    urls = models.BinaryField(default=b"")
    entries = models.IntegerField(default=0)
    skipped = models.IntegerField(default=0)
    digest = models.CharField(max_length=64, blank=True)  # SHA-256 of the text last stored
    changed_at = models.DateTimeField(null=True, blank=True)  # when what it holds last changed
    read_at = models.DateTimeField(null=True, blank=True)  # when it was last read whole
    error = models.TextField(blank=True)  # why the last reading failed; '' if it did not

    objects = ScreenListQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["allow", "name"], name="screening_list_once")]

    def __str__(self) -> str:
        return f"{'allowlist' if self.allow else 'blocklist'} {self.name}"
