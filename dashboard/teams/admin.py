from django.contrib import admin

from . import access
from .models import AuditEntry, Membership, Role, Team


class ReadOnlyAdmin(admin.ModelAdmin):
    """Teams, members and the audit log are changed on the dashboard's team
    pages and through the API, where every change is checked and audited;
    the admin shows them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class MembershipInline(admin.TabularInline):
    model = Membership
    fields = ["user", "role", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Team)
class TeamAdmin(ReadOnlyAdmin):
    list_display = ["name", "personal_for", "created_at"]
    search_fields = ["name"]
    list_select_related = ["personal_for"]
    fields = ["name", "personal_for", "created_at"]
    readonly_fields = fields
    inlines = [MembershipInline]

    def get_queryset(self, request):
        return access.teams_of(request.user).select_related("personal_for")


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    """A team's log, for its admins."""

    list_display = ["created_at", "team", "actor_name", "action", "slug", "subject"]
    list_filter = ["action"]
    search_fields = ["slug", "subject", "actor_name"]
    list_select_related = ["team"]
    show_full_result_count = False

    def get_queryset(self, request):
        return AuditEntry.objects.filter(team__in=access.teams_of(request.user, Role.ADMIN))
