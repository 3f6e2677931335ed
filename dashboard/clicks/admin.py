from django.contrib import admin, messages

from .clickhouse_clicks import using_clickhouse
from .models import Click


@admin.register(Click)
class ClickAdmin(admin.ModelAdmin):
    """The clicks of the links the person sees (teams/access.py)."""

    list_display = ["occurred_at", "slug", "ip", "browser", "os", "device", "country", "is_bot", "referer_host"]
    search_fields = ["slug"]
    date_hierarchy = "occurred_at"
    show_full_result_count = False

    def get_queryset(self, request):
        # Here, not at the top: Django imports every admin module in every
        # process as it starts, and the selectors bring DRF's search and the
        # enrichment.
        from .selectors import clicks_visible_to

        return clicks_visible_to(request.user)

    def changelist_view(self, request, extra_context=None):
        if using_clickhouse():
            messages.warning(
                request,
                "Clicks are stored in ClickHouse (CLICK_STORE=clickhouse): this list shows only those still in "
                "PostgreSQL, which `manage.py move_clicks` moves there. The cluster's clicks are in each link's "
                "stats and export, and in /api/v1/clicks.",
            )
        return super().changelist_view(request, extra_context)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
