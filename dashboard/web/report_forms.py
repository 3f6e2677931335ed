"""The forms of the report pages: a link's report and its export, and the
operators' pages of the last days."""

from datetime import date, datetime, time, timedelta, tzinfo

from django import forms
from django.core.exceptions import ValidationError

from clicks.calendar import INTERVALS, StatsRange, checked_filters, stats_range
from clicks.orphans import ORPHAN_KIND_LABELS, orphan_domain
from clicks.rollups import DIMENSIONS

from .forms import DateInput, add_service_errors
from .reports import DEFAULT_PRESET, PRESETS, auto_interval, preset_range


class ReportForm(forms.Form):
    """A report's range, bucket, bots and filters, as the link page takes
    them from its query string. A preset (web.reports.PRESETS) or a custom
    range of whole days (`from` and `to`, both included) in the person's
    zone; the limits are clicks.calendar.stats_range's. `filters` are the
    dimensions given in the query, an empty value included (a referrer host
    of '' is a direct visit). After is_valid(), `span` is the StatsRange."""

    range = forms.ChoiceField(
        choices=[*PRESETS.items(), ("custom", "Custom")], required=False, widget=forms.HiddenInput
    )
    interval = forms.ChoiceField(
        label="By",
        choices=[("", "Best fit"), *((name, name) for name in INTERVALS)],
        required=False,
    )
    include_bots = forms.BooleanField(label="Include bots", required=False)

    def __init__(self, *args, now: datetime, zone: tzinfo, since: datetime | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        # `from` is a Python keyword, so these two cannot be class attributes.
        self.fields["from"] = forms.DateField(label="From", required=False, widget=DateInput)
        self.fields["to"] = forms.DateField(label="To (included)", required=False, widget=DateInput)
        self.now, self.zone, self.since = now, zone, since
        self.span: StatsRange | None = None
        self.preset = DEFAULT_PRESET
        self.filters = {name: self.data[name] for name in DIMENSIONS if name in self.data}

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        first, last = data.get("from"), data.get("to")
        if first or last or data.get("range") == "custom":
            self.preset = "custom"
            today = self.now.astimezone(self.zone).date()
            first, last = first or last or today, last or today
            if last < first:
                self.add_error("to", "The last day must not be before the first.")
                return data
            if last == date.max:
                self.add_error("to", "That day is later than a report can reach.")
                return data
            start = datetime.combine(first, time(), tzinfo=self.zone)
            end = datetime.combine(last + timedelta(days=1), time(), tzinfo=self.zone)
        else:
            self.preset = data.get("range") or DEFAULT_PRESET
            start, end = preset_range(self.preset, now=self.now, zone=self.zone, since=self.since)
        try:
            self.span = stats_range(
                start=start,
                end=end,
                interval=data.get("interval") or auto_interval(start, end),
                include_bots=data["include_bots"],
                zone=self.zone,
                filters=self.filters,
            )
        except ValidationError as exc:
            add_service_errors(self, exc)
        return data

    def default_span(self) -> StatsRange:
        """The default report, shown below the errors of a query that is not one."""
        start, end = preset_range(DEFAULT_PRESET, now=self.now, zone=self.zone)
        return stats_range(start=start, end=end, interval=auto_interval(start, end), zone=self.zone)


class ClickExportForm(forms.Form):
    """The export's range (the report's [from, to), as instants), bots and filters."""

    include_bots = forms.BooleanField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["from"] = forms.DateTimeField()
        self.fields["to"] = forms.DateTimeField()
        self.filters = {name: self.data[name] for name in DIMENSIONS if name in self.data}

    def clean(self):
        try:
            checked_filters(self.filters)
        except ValidationError as exc:
            add_service_errors(self, exc)
        return super().clean()


class DaysForm(forms.Form):
    """A staff page's range: the last `days` days (one of `choices`), and bots in or out."""

    humans_only = forms.BooleanField(label="Leave bots out", required=False)

    def __init__(self, query, *, choices: tuple[int, ...], default: int):
        data = query.copy()
        data.setdefault("days", str(default))  # the select shows what the page reads
        super().__init__(data)
        self.default = default
        self.fields["days"] = forms.TypedChoiceField(
            label="Last",
            coerce=int,
            choices=[(n, f"{n} day{'s' if n > 1 else ''}") for n in choices],
            required=False,
            empty_value=None,
        )

    def days(self) -> int:
        return (self.cleaned_data["days"] if self.is_valid() else None) or self.default

    def include_bots(self) -> bool:
        return not (self.is_valid() and self.cleaned_data["humans_only"])


class OrphanVisitsForm(DaysForm):
    """The orphan visits page's range, bots, domain and kind."""

    domain = forms.CharField(label="Domain", required=False, help_text="A host; empty: every domain.")
    kind = forms.ChoiceField(
        label="Found",
        required=False,
        choices=[("", "anything"), *ORPHAN_KIND_LABELS.items()],
        help_text="What the edge found at the path.",
    )

    def clean_domain(self) -> str | None:
        """As orphan_visits names the domain ('' the default one); None for every domain."""
        host = self.cleaned_data["domain"].strip()
        return orphan_domain(host) if host else None

    def orphan_domain(self) -> str | None:
        return self.cleaned_data["domain"] if self.is_valid() else None

    def orphan_kind(self) -> str | None:
        return (self.cleaned_data["kind"] or None) if self.is_valid() else None
