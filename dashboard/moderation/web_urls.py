from django.urls import path

from . import views

app_name = "moderation"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("<int:pk>/act", views.report_act, name="report-act"),
    path("bans/<int:pk>/lift", views.unban, name="unban"),
]
