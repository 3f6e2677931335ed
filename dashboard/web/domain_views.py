"""The domains pages, for staff (links.domains)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from links import domains
from links.models import Domain

from . import forms


def _staff(user) -> bool:
    return user.is_active and (user.is_staff or user.is_superuser)


@login_required
def domain_list(request):
    """Every domain; staff add, change and remove them (links/domains.py)."""
    form = forms.DomainForm(forms.posted(request))
    if request.method == "POST":
        if not _staff(request.user):
            raise PermissionDenied("Only staff manage domains.")
        if form.is_valid():
            try:
                domain = domains.domain_create(**form.cleaned_data)
            except ValidationError as exc:
                forms.add_service_errors(form, exc)
            else:
                messages.success(request, f"Added {domain.host}.")
                return redirect("web:domain-list")
    return render(
        request,
        "web/domain_list.html",
        {"domains": domains.domain_list(), "form": form, "staff": _staff(request.user)},
    )


def _domain_or_404(host: str) -> Domain:
    """The domain of a host as the API finds it (links.domains.domain_for_host),
    or a 404 for anything else, a host that cannot be one included."""
    try:
        return domains.domain_for_host(host)
    except Domain.DoesNotExist:
        raise Http404("No such domain.") from None


@login_required
def domain_edit(request, host: str):
    if not _staff(request.user):
        raise PermissionDenied("Only staff manage domains.")
    domain = _domain_or_404(host)
    form = forms.DomainForm(forms.posted(request), instance=domain, editing=True)
    if request.method == "POST" and form.is_valid():
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        try:
            domains.domain_update(domain=Domain.objects.get(pk=domain.pk), **changes)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, f"Saved {domain.host}.")
            return redirect("web:domain-list")
    return render(request, "web/domain_form.html", {"form": form, "domain": domain})


@login_required
@require_POST
def domain_delete(request, host: str):
    if not _staff(request.user):
        raise PermissionDenied("Only staff manage domains.")
    domain = _domain_or_404(host)
    try:
        domains.domain_delete(domain=domain)
    except domains.DomainInUse as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Removed {host}.")
    return redirect("web:domain-list")
