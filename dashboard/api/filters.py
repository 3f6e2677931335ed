from datetime import timedelta

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField

from links.models import Link

# PostgreSQL keeps time zone offsets within ±15:59; Python accepts more, so
# larger ones are refused here as 400s rather than failing in the database.
_MAX_OFFSET = timedelta(hours=15, minutes=59)


class StorableIsoDateTimeField(IsoDateTimeField):
    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is not None and parsed.utcoffset() is not None and abs(parsed.utcoffset()) > _MAX_OFFSET:
            raise forms.ValidationError("The time zone offset is out of range.", code="invalid")
        return parsed


class StorableDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = StorableIsoDateTimeField


class LinkFilter(django_filters.FilterSet):
    tag = django_filters.CharFilter(method="filter_tag", help_text="Links with this tag.")
    is_active = django_filters.BooleanFilter()
    created_after = StorableDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = StorableDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = Link
        fields = ["tag", "is_active", "created_after", "created_before"]

    def filter_tag(self, queryset, name, value):
        return queryset.filter(tags__contains=[value])
