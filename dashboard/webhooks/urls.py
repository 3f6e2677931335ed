from django.urls import include, path
from rest_framework.routers import SimpleRouter

from .api import WebhookViewSet

router = SimpleRouter(trailing_slash=False)
router.register("webhooks", WebhookViewSet, basename="webhook")

urlpatterns = [path("", include(router.urls))]
