from django.conf import settings
from django.db import models
from django.utils import timezone


class Source(models.TextChoices):
    """Where an import reads from (importers/sources/)."""

    SHLINK = "shlink", "Shlink (REST API)"
    YOURLS = "yourls", "YOURLS (database dump)"
    KUTT = "kutt", "Kutt (API v2)"
    BITLY = "bitly", "Bitly (API v4 or CSV export)"
    CSV = "csv", "Slingshot (links CSV export)"


class State(models.TextChoices):
    QUEUED = "queued", "waiting"
    RUNNING = "running", "running"
    DONE = "done", "done"
    FAILED = "failed", "failed"


class ImportJob(models.Model):
    """One import of links and their visits into a team (importers/jobs.py):
    run in the foreground by `manage.py import_links`, or queued by the
    Import page for `manage.py run_imports` (`background`). Its tables are in
    sql/importers.sql.

    `options` holds what the source needs but a secret (its address, a
    group, the moment its visits are read up to); `secret` the API key or
    token, encrypted (importers/secrets.py) and emptied when the job ends;
    an uploaded file is in ImportFile until then. `progress` says how far it
    got ({"phase", "done", "total"}, and the visits stored, from which a job
    taken over after its worker died goes on); `summary` what it did
    (importers/summary.py's Summary)."""

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="import_jobs")
    # The links of the source's default domain go here; None: the default domain.
    domain = models.ForeignKey("links.Domain", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Who started it, and so creates the links (an editor of the team).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    source = models.CharField(max_length=10, choices=Source.choices)
    options = models.JSONField(default=dict, blank=True)
    secret = models.BinaryField(default=b"", blank=True)
    dry_run = models.BooleanField(default=False)
    background = models.BooleanField(default=False)
    state = models.CharField(max_length=7, choices=State.choices, default=State.QUEUED)
    progress = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(state__in=State.values), name="importjob_state_valid"),
            models.CheckConstraint(condition=models.Q(source__in=Source.values), name="importjob_source_valid"),
        ]

    def __str__(self) -> str:
        return f"import #{self.pk} from {self.source} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (State.DONE, State.FAILED)


class ImportFile(models.Model):
    """An uploaded file of a job, in parts, kept until the job ends: a worker
    on another host reads it from here."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="files", db_index=False)
    part = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["job", "part"]
        constraints = [models.UniqueConstraint(fields=["job", "part"], name="importfile_part_once")]

    def __str__(self) -> str:
        return f"part {self.part} of import #{self.job_id}"


class ImportedLink(models.Model):
    """A link an import made, by the source's own name for it: a later run
    finds it here (and brings only its new visits) rather than taking the
    link with the same slug for a clash. It goes with the link."""

    # The source, as importers/sources/ name it (its kind and address), and the link's id there.
    source_key = models.CharField(max_length=300)
    external_id = models.CharField(max_length=300)
    link = models.ForeignKey("links.Link", on_delete=models.CASCADE, related_name="+")
    job = models.ForeignKey(ImportJob, null=True, on_delete=models.SET_NULL, related_name="+")
    # Visits the source counts but cannot list (Kutt, Bitly), added to the link's all-time clicks.
    carried_clicks = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source_key", "external_id"], name="importedlink_once"),
        ]

    def __str__(self) -> str:
        return f"{self.source_key} {self.external_id} -> link {self.link_id}"
