"""What Django answers when a request fails before or outside a view: JSON
for the API (its clients read JSON, whatever went wrong), Django's own
pages for the dashboard, with its templates (web/templates/404.html and the others)."""

from django.http import JsonResponse
from django.views import defaults


def _api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception):
    if _api(request):
        return JsonResponse({"detail": "Bad request."}, status=400)
    return defaults.bad_request(request, exception)


def permission_denied(request, exception):
    if _api(request):
        return JsonResponse({"detail": "You do not have permission to perform this action."}, status=403)
    return defaults.permission_denied(request, exception)


def page_not_found(request, exception):
    if _api(request):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _api(request):
        return JsonResponse({"detail": "Internal error; it has been logged."}, status=500)
    return defaults.server_error(request)
