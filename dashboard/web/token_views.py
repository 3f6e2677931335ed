"""A person's API tokens (tokens.services)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from tokens import services as token_services
from tokens.models import ApiToken
from tokens.signatures import token_signature

from . import forms
from .teams import current_team

CREATED_TOKEN = "created_token"  # the session key that carries a new token's secret to the one page that shows it


@login_required
def tokens(request):
    """Post/redirect/get: a create redirects here, and the secret rides in
    the session to the next page only, so a reload never creates another."""
    form = forms.TokenForm(forms.posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            token, raw = token_services.token_create(user=request.user, team=current_team(request), **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            request.session[CREATED_TOKEN] = {"pk": token.pk, "raw": raw}
            return redirect("web:tokens")
    tokens = ApiToken.objects.filter(user=request.user).select_related("team")
    created = request.session.pop(CREATED_TOKEN, None) if request.method == "GET" else None
    if created:
        token = next((token for token in tokens if token.pk == created["pk"]), None)
        created = {"token": token, "raw": created["raw"], "signature": token_signature(token) if token else None}
    return render(request, "web/tokens.html", {"form": form, "created": created, "tokens": tokens})


@login_required
@require_POST
def token_revoke(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token = token_services.token_revoke(token=token, actor=request.user)
    messages.success(request, f"Revoked {token}.")
    return redirect("web:tokens")
