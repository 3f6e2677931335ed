from django.contrib.auth import views as auth_views
from django.urls import path, re_path

from links import slugs

from . import (
    account_views,
    domain_views,
    import_views,
    link_views,
    report_views,
    source_import_views,
    sso_views,
    team_views,
    token_views,
    webhook_views,
)

app_name = "web"
SLUG = rf"(?P<slug>{slugs.PATTERN})"
USERNAME = r"(?P<username>[\w.@+-]{1,150})"

urlpatterns = [
    path("", report_views.overview, name="overview"),
    path("live", report_views.overview_live, name="overview-live"),
    path("live/events", report_views.live_events, name="live-events"),
    path("sign-in/", account_views.SignInView.as_view(), name="sign-in"),
    path("sign-out/", sso_views.SignOutView.as_view(), name="sign-out"),
    path("sign-in/sso/", sso_views.sso_begin, name="sso-begin"),
    path("sign-in/sso/done", sso_views.sso_done, name="sso-done"),
    path("sign-in/sso/link", sso_views.sso_link, name="sso-link"),
    path("password/", account_views.PasswordChangeView.as_view(), name="password-change"),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(template_name="web/password_change_done.html"),
        name="password-change-done",
    ),
    path("links/", link_views.link_list, name="link-list"),
    path("links/new/", link_views.link_create, name="link-create"),
    path("links/export.csv", link_views.link_export, name="link-export"),
    path("links/bulk", link_views.link_bulk, name="link-bulk"),
    path("links/import/", import_views.link_import, name="link-import"),
    path("links/import/<int:pk>/", import_views.link_import_detail, name="link-import-detail"),
    path("links/import/<int:pk>/run", import_views.link_import_run, name="link-import-run"),
    path("import/", source_import_views.source_import, name="source-import"),
    path("import/<int:pk>/", source_import_views.source_import_detail, name="source-import-detail"),
    path("import/<int:pk>/import", source_import_views.source_import_for_real, name="source-import-for-real"),
    re_path(rf"^links/{SLUG}/$", report_views.link_detail, name="link-detail"),
    re_path(rf"^links/{SLUG}/report$", report_views.link_report, name="link-report"),
    re_path(rf"^links/{SLUG}/live$", report_views.link_live, name="link-live"),
    re_path(rf"^links/{SLUG}/clicks$", report_views.link_clicks_export, name="link-clicks-export"),
    re_path(rf"^links/{SLUG}/edit/$", link_views.link_edit, name="link-edit"),
    re_path(rf"^links/{SLUG}/toggle$", link_views.link_toggle, name="link-toggle"),
    re_path(rf"^links/{SLUG}/delete/$", link_views.link_delete, name="link-delete"),
    re_path(rf"^links/{SLUG}/qr\.(?P<kind>png|svg)$", link_views.link_qr, name="link-qr"),
    re_path(r"^unlock/(?P<rest>.*)$", link_views.link_unlock_moved, name="link-unlock-moved"),
    path("domains/", domain_views.domain_list, name="domain-list"),
    path("domains/<str:host>/edit/", domain_views.domain_edit, name="domain-edit"),
    path("domains/<str:host>/delete", domain_views.domain_delete, name="domain-delete"),
    path("tokens/", token_views.tokens, name="tokens"),
    path("time-zone/", account_views.time_zone, name="time-zone"),
    path("orphan-visits/", report_views.orphan_visits, name="orphan-visits"),
    path("accounting/", report_views.accounting, name="accounting"),
    path("tokens/<int:pk>/revoke", token_views.token_revoke, name="token-revoke"),
    path("users/", account_views.users, name="users"),
    path("users/<int:pk>/active", account_views.user_active, name="user-active"),
    path("users/<int:pk>/password-link", account_views.user_password_link, name="user-password-link"),
    path("account/", account_views.account, name="account"),
    path("password/set/<uidb64>/<token>/", account_views.PasswordSetView.as_view(), name="password-set"),
    path("teams/", team_views.team_list, name="team-list"),
    path("teams/switch", team_views.team_switch, name="team-switch"),
    path("teams/<int:team_id>/", team_views.team_detail, name="team-detail"),
    path("teams/<int:team_id>/groups", team_views.group_role_add, name="group-role-add"),
    path("teams/<int:team_id>/groups/<int:pk>/remove", team_views.group_role_remove, name="group-role-remove"),
    path("teams/<int:team_id>/rename", team_views.team_rename, name="team-rename"),
    path("teams/<int:team_id>/delete/", team_views.team_delete, name="team-delete"),
    path("teams/<int:team_id>/audit/", team_views.team_audit, name="team-audit"),
    path("teams/<int:team_id>/webhooks/", webhook_views.webhook_list, name="webhook-list"),
    path("teams/<int:team_id>/webhooks/<int:pk>/edit", webhook_views.webhook_edit, name="webhook-edit"),
    path("teams/<int:team_id>/webhooks/<int:pk>/toggle", webhook_views.webhook_toggle, name="webhook-toggle"),
    path("teams/<int:team_id>/webhooks/<int:pk>/delete", webhook_views.webhook_delete, name="webhook-delete"),
    path("teams/<int:team_id>/webhooks/<int:pk>/test", webhook_views.webhook_test, name="webhook-test"),
    path("teams/<int:team_id>/webhooks/<int:pk>/rotate-secret", webhook_views.webhook_rotate, name="webhook-rotate"),
    path(
        "teams/<int:team_id>/webhooks/<int:pk>/deliveries/", webhook_views.webhook_deliveries, name="webhook-deliveries"
    ),
    path(
        "teams/<int:team_id>/webhooks/<int:pk>/deliveries/<int:attempt_id>/redeliver",
        webhook_views.webhook_redeliver,
        name="webhook-redeliver",
    ),
    re_path(rf"^teams/(?P<team_id>[0-9]+)/members/{USERNAME}/role$", team_views.member_role, name="member-role"),
    re_path(rf"^teams/(?P<team_id>[0-9]+)/members/{USERNAME}/remove$", team_views.member_remove, name="member-remove"),
]
