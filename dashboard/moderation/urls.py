from django.urls import include, path
from rest_framework.routers import SimpleRouter

from .api import ReportViewSet

router = SimpleRouter(trailing_slash=False)
router.register("reports", ReportViewSet, basename="report")

urlpatterns = [path("", include(router.urls))]
