from django.contrib import admin

from . import services
from .models import Link
from .selectors import links_visible_to


@admin.register(Link)
class LinkAdmin(admin.ModelAdmin):
    """The admin edits links through the services, so every change is
    published, and shows each person the links the API and the pages show
    them: the model permissions staff are given apply to those only."""

    list_display = ["slug", "url", "owner", "is_active", "redirect_status", "created_at"]
    list_filter = ["is_active", "redirect_status"]
    search_fields = ["slug", "url", "title"]
    list_select_related = ["owner"]
    # The password is set from the dashboard's link form or the API, which take it in clear.
    fields = [
        "slug",
        "url",
        "title",
        "description",
        "redirect_status",
        "valid_since",
        "expires_at",
        "max_visits",
        "forward_query",
        "crawlable",
        "is_active",
        "owner",
    ]
    readonly_fields = ["owner"]
    actions = ["delete_selected"]

    def save_model(self, request, obj, form, change):
        data = {name: form.cleaned_data[name] for name in form.changed_data if name in services.EDITABLE_FIELDS}
        if change:
            link = Link.objects.get(pk=obj.pk)
            services.link_update(link=link, **data)
        else:
            created = services.link_create(owner=request.user, **data)
            obj.pk, obj.slug, obj.owner = created.pk, created.slug, created.owner

    def get_queryset(self, request):
        return links_visible_to(request.user).select_related("owner")

    def delete_model(self, request, obj):
        services.link_delete(link=obj)

    def delete_queryset(self, request, queryset):
        for link in queryset:
            services.link_delete(link=link)
