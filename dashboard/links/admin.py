from django.contrib import admin

from teams import access
from teams.models import Role

from .fields import OPTION_NAMES, LinkFields
from .models import Link
from .selectors import links_visible_to


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    """The admin edits links through the services, so every change is
    published and audited, and shows each person the links the API and the
    pages show them (teams/access.py): the model permissions staff are given
    apply to those only, and changing or deleting one also takes the editor
    role in its team."""

    list_display = ["slug", "url", "team", "owner", "is_active", "redirect_status", "created_at"]
    list_filter = ["is_active", "redirect_status"]
    search_fields = ["slug", "url", "title"]
    list_select_related = ["team", "owner"]
    # Every option but the password, which the link form and the API take in clear (links/fields.py).
    fields = [*(name for name in OPTION_NAMES if name != "password"), "team", "owner"]
    actions = ["delete_selected"]

    def get_readonly_fields(self, request, obj=None):
        return ["team", "owner"] if obj else ["owner"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "team":
            kwargs["queryset"] = access.teams_of(request.user, Role.EDITOR)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def _edits(self, request, obj) -> bool:
        return obj is None or access.allows(access.role_in(request.user, obj.team_id), Role.EDITOR)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._edits(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._edits(request, obj)

    # The services are imported where the admin uses them: Django imports
    # every admin module in every process as it starts (a service, a
    # manage.py command), and the services bring Redis', DNS and HTTP
    # clients with them.

    def save_model(self, request, obj, form, change):
        from . import services

        data = {name: form.cleaned_data[name] for name in form.changed_data if name in services.EDITABLE_FIELDS}
        if change:
            link = Link.objects.get(pk=obj.pk)
            services.link_update(link=link, actor=request.user, **data)
        else:
            team = data.pop("team", None)
            created = services.link_create(owner=request.user, fields=LinkFields(**data), team=team)
            obj.pk, obj.slug, obj.owner, obj.team = created.pk, created.slug, created.owner, created.team

    def get_queryset(self, request):
        return links_visible_to(request.user).select_related("team", "owner")

    def delete_model(self, request, obj):
        from . import services

        services.link_delete(link=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        from . import services

        for link in queryset:
            services.link_delete(link=link, actor=request.user)
