"""The UTM templates page of the team chosen in the navigation
(links/utm_templates.py): its members read the templates; editors make,
change and delete them. The link form's UTM builder offers them."""

from django import forms as django_forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from links import utm_templates
from links.models import UtmTemplate

from . import forms
from .teams import current_team, edits_in


class UtmTemplateForm(django_forms.ModelForm):
    class Meta:
        model = UtmTemplate
        fields = ["name", "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content"]
        labels = {name: name for name in fields[1:]}
        help_texts = {"name": "What the link form's UTM builder lists it as; unique in the team."}


def _template_or_404(request, pk: int) -> UtmTemplate:
    template = utm_templates.templates_of([current_team(request).pk]).filter(pk=pk).first()
    if template is None:
        raise Http404("No such UTM template in this team.")
    return template


def _require_editor(request, team) -> None:
    if not edits_in(request, team):
        raise PermissionDenied("To change UTM templates takes the editor role in this team.")


@login_required
def utm_template_list(request):
    team = current_team(request)
    form = UtmTemplateForm(forms.posted(request))
    if request.method == "POST":
        _require_editor(request, team)
        if form.is_valid():
            try:
                template = utm_templates.utm_template_create(actor=request.user, team_id=team.pk, **form.cleaned_data)
            except ValidationError as exc:
                forms.add_service_errors(form, exc)
            else:
                messages.success(request, f"Made the UTM template {template.name}.")
                return redirect("web:utm-templates")
    return render(
        request,
        "web/utm_templates.html",
        {
            "team": team,
            "templates": utm_templates.templates_of([team.pk]),
            "form": form,
            "edits": edits_in(request, team),
        },
    )


@login_required
def utm_template_edit(request, pk: int):
    template = _template_or_404(request, pk)
    _require_editor(request, template.team)
    form = UtmTemplateForm(forms.posted(request), instance=UtmTemplate.objects.get(pk=template.pk))
    if request.method == "POST" and form.is_valid():
        try:
            utm_templates.utm_template_update(actor=request.user, template=template, **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            messages.success(request, "Saved.")
            return redirect("web:utm-templates")
    return render(request, "web/utm_template_edit.html", {"form": form, "template": template})


@login_required
@require_POST
def utm_template_delete(request, pk: int):
    template = _template_or_404(request, pk)
    _require_editor(request, template.team)
    utm_templates.utm_template_delete(actor=request.user, template=template)
    messages.success(request, f"Deleted the UTM template {template.name}.")
    return redirect("web:utm-templates")
