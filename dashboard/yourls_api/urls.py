from django.urls import path

from .views import yourls_api

urlpatterns = [path("yourls-api.php", yourls_api, name="yourls-api")]
