from django.conf import settings
from django.db import models
from django.utils import timezone


class LinkImport(models.Model):
    """A CSV file of links, checked row by row when uploaded and then created
    in chunks (web/imports.py). `rows` holds, per CSV row, its line number,
    its fields as read, and its errors ({field: [message]}, empty when the
    row is valid); `position` is how many rows have been through the import."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="link_imports")
    filename = models.CharField(max_length=255)
    rows = models.JSONField(default=list)
    position = models.PositiveIntegerField(default=0)
    created = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.filename} ({len(self.rows)} rows)"

    @property
    def total(self) -> int:
        return len(self.rows)

    @property
    def failed(self) -> int:
        return sum(1 for row in self.rows if row["errors"])

    @property
    def done(self) -> bool:
        return self.position >= len(self.rows)
