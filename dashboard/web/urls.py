from django.contrib.auth import views as auth_views
from django.urls import path, re_path, reverse_lazy

from links import slugs

from . import views

app_name = "web"
SLUG = rf"(?P<slug>{slugs.PATTERN})"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("sign-in/", views.SignInView.as_view(), name="sign-in"),
    path("sign-out/", auth_views.LogoutView.as_view(), name="sign-out"),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="web/password_change.html", success_url=reverse_lazy("web:password-change-done")
        ),
        name="password-change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="web/password_change_done.html"),
        name="password-change-done",
    ),
    path("links/", views.link_list, name="link-list"),
    path("links/new/", views.link_create, name="link-create"),
    path("links/export.csv", views.link_export, name="link-export"),
    path("links/import/", views.link_import, name="link-import"),
    path("links/import/<int:pk>/", views.link_import_detail, name="link-import-detail"),
    path("links/import/<int:pk>/run", views.link_import_run, name="link-import-run"),
    re_path(rf"^links/{SLUG}/$", views.link_detail, name="link-detail"),
    re_path(rf"^links/{SLUG}/edit/$", views.link_edit, name="link-edit"),
    re_path(rf"^links/{SLUG}/toggle$", views.link_toggle, name="link-toggle"),
    re_path(rf"^links/{SLUG}/delete/$", views.link_delete, name="link-delete"),
    re_path(rf"^links/{SLUG}/qr\.(?P<kind>png|svg)$", views.link_qr, name="link-qr"),
    path("unlock/<int:pk>/", views.link_unlock, name="link-unlock"),
    path("domains/", views.domain_list, name="domain-list"),
    path("domains/<str:host>/edit/", views.domain_edit, name="domain-edit"),
    path("domains/<str:host>/delete", views.domain_delete, name="domain-delete"),
    path("tokens/", views.tokens, name="tokens"),
    path("tokens/<int:pk>/revoke", views.token_revoke, name="token-revoke"),
]
