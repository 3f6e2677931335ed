"""A team's webhooks on the dashboard: add, change (address, events,
description), disable and enable, delete, send a test event, rotate the
signing secret, and each one's delivery log
with a redelivery per attempt. The services of webhooks/ act and check who
may (teams.access.manages_webhooks: the team's admins); these pages parse
and show. Anyone else finds nothing here, a 404, as the API answers them."""

import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from teams import access
from teams.models import Team
from webhooks import selectors, services
from webhooks.delivery import PREVIOUS_SECRET_FOR
from webhooks.models import Attempt, Webhook

from . import forms

DELIVERIES_PER_PAGE = 50
# The session key that carries a new signing secret to the one page that shows it.
SHOWN_SECRET = "webhook_secret"


def _team_or_404(request, team_id: int) -> Team:
    team = Team.objects.filter(pk=team_id).first() if access.manages_webhooks(request.user, team_id) else None
    if team is None:
        raise Http404("No such team among those whose webhooks you manage.")
    return team


def _webhook_or_404(request, team_id: int, pk: int) -> Webhook:
    webhook = selectors.webhooks_managed_by(request.user).filter(team_id=team_id, pk=pk).first()
    if webhook is None:
        raise Http404("No such webhook among those you manage.")
    return webhook


def _show_once(request, webhook: Webhook, secret: str, *, rotated: bool):
    """Post/redirect/get, as the tokens page has it: the secret rides in the
    session to the next page only, so a reload neither repeats the action
    nor shows the secret again."""
    request.session[SHOWN_SECRET] = {"webhook": webhook.pk, "secret": secret, "rotated": rotated}
    return redirect("web:webhook-list", team_id=webhook.team_id)


def _errors(request, exc: ValidationError) -> None:
    for message in exc.messages:
        messages.error(request, message)


@login_required
def webhook_list(request, team_id: int):
    team = _team_or_404(request, team_id)
    form = forms.WebhookForm(forms.posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            webhook, secret = services.webhook_create(actor=request.user, team=team, **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            return _show_once(request, webhook, secret, rotated=False)
    webhooks = list(selectors.webhooks_managed_by(request.user).filter(team=team))
    shown = request.session.pop(SHOWN_SECRET, None) if request.method == "GET" else None
    if shown:
        webhook = next((webhook for webhook in webhooks if webhook.pk == shown["webhook"]), None)
        shown = {**shown, "url": webhook.url} if webhook else None
    return render(
        request,
        "web/webhook_list.html",
        {
            "team": team,
            "webhooks": webhooks,
            "form": form,
            "shown": shown,
            "previous_hours": int(PREVIOUS_SECRET_FOR.total_seconds() // 3600),
        },
    )


@login_required
def webhook_edit(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    kept = {"url": webhook.url, "events": list(webhook.events), "description": webhook.description}
    form = forms.WebhookForm(forms.posted(request), initial=kept)
    if request.method == "POST" and form.is_valid():
        try:
            # A copy: a change the service refuses leaves `webhook`, which the page shows, as it is.
            copy = _webhook_or_404(request, team_id, pk)
            services.webhook_update(actor=request.user, webhook=copy, **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved the webhook {form.cleaned_data['url']}.")
            return redirect("web:webhook-list", team_id=team_id)
    return render(request, "web/webhook_edit.html", {"team": webhook.team, "webhook": webhook, "form": form})


@login_required
@require_POST
def webhook_toggle(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    webhook = services.webhook_update(actor=request.user, webhook=webhook, enabled=not webhook.enabled)
    if webhook.enabled:
        messages.success(request, f"Enabled {webhook.url}: what waits for it is sent now.")
    else:
        messages.success(request, f"Disabled {webhook.url}: nothing is sent to it until it is enabled again.")
    return redirect("web:webhook-list", team_id=team_id)


@login_required
@require_POST
def webhook_delete(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    services.webhook_delete(actor=request.user, webhook=webhook)
    messages.success(request, f"Deleted the webhook {webhook.url}, its messages and its delivery log.")
    return redirect("web:webhook-list", team_id=team_id)


@login_required
@require_POST
def webhook_test(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    try:
        message = services.webhook_send_test(actor=request.user, webhook=webhook)
    except ValidationError as exc:
        _errors(request, exc)
    else:
        messages.success(
            request,
            f"A test event ({message.msg_id}) is on its way to {webhook.url}: its delivery log shows how it went.",
        )
    return redirect("web:webhook-list", team_id=team_id)


@login_required
@require_POST
def webhook_rotate(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    secret = services.webhook_rotate_secret(actor=request.user, webhook=webhook)
    return _show_once(request, webhook, secret, rotated=True)


@login_required
def webhook_deliveries(request, team_id: int, pk: int):
    webhook = _webhook_or_404(request, team_id, pk)
    page = Paginator(selectors.deliveries_of(webhook), DELIVERIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "web/webhook_deliveries.html", {"team": webhook.team, "webhook": webhook, "page": page})


@login_required
@require_POST
def webhook_redeliver(request, team_id: int, pk: int, attempt_id: int):
    webhook = _webhook_or_404(request, team_id, pk)
    attempt = Attempt.objects.filter(webhook=webhook, pk=attempt_id).select_related("message__webhook").first()
    if attempt is None:
        raise Http404("No such delivery of this webhook.")
    try:
        message = services.message_redeliver(actor=request.user, message=attempt.message)
    except ValidationError as exc:
        _errors(request, exc)
    else:
        messages.success(request, f"{message.event_type} {message.msg_id} is sent again, with its id and body.")
    back = reverse("web:webhook-deliveries", kwargs={"team_id": team_id, "pk": pk})
    page = request.POST.get("page", "")
    return redirect(f"{back}?page={page}" if re.fullmatch(r"[1-9][0-9]{0,8}", page) and page != "1" else back)
