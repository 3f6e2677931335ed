"""People on the dashboard: a superuser's page of everyone (invite,
deactivate, give a link to set a new password; accounts/services.py acts)
and each person's own page of their sessions and tokens, with their last
use. An invitation or reset link opens Django's own set-password form."""

import time

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpResponseRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse_lazy
from django.utils import timezone as tz
from django.views.decorators.http import require_POST

from accounts import second_factor, selectors, services, sso
from accounts.backends import password_sign_in_open_to
from slingshot import signin
from teams import access

from . import forms
from . import services as web_services
from .middleware import PASSWORD_DUE_KEY, remember_time_zone


def _managers_only(request) -> None:
    if not access.manages_users(request.user):
        raise PermissionDenied("Managing people takes a superuser.")


USERS_PER_PAGE = 50


def _users_page(request, form, link=None):
    search = forms.PeopleSearchForm(request.GET)
    people = selectors.users_for_management(search=search.is_valid() and search.cleaned_data["q"] or "")
    page = Paginator(people, USERS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "web/users.html",
        {"form": form, "search": search, "page": page, "query": query.urlencode(), "link": link},
    )


@login_required
def users(request):
    _managers_only(request)
    form = forms.InviteForm(forms.posted(request))
    if request.method == "POST" and form.is_valid():
        try:
            user, path = services.user_invite(actor=request.user, **form.cleaned_data)
        except ValidationError as exc:
            forms.add_service_errors(form, exc)
        else:
            link = {"user": user, "url": request.build_absolute_uri(path), "what": "invitation"}
            return _users_page(request, forms.InviteForm(), link)
    return _users_page(request, form)


@login_required
@require_POST
def user_active(request, pk: int):
    _managers_only(request)
    user = get_object_or_404(get_user_model(), pk=pk)
    active = request.POST.get("active") == "true"
    try:
        services.user_set_active(actor=request.user, user=user, active=active)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        done = "reactivated" if active else "deactivated: their sessions are ended and their tokens refused"
        messages.success(request, f"{user.get_username()} is {done}.")
    return redirect("web:users")


@login_required
@require_POST
def user_password_link(request, pk: int):
    _managers_only(request)
    user = get_object_or_404(get_user_model(), pk=pk)
    path = services.user_password_reset(actor=request.user, user=user)
    link = {"user": user, "url": request.build_absolute_uri(path), "what": "new password"}
    return _users_page(request, forms.InviteForm(), link)


@login_required
@require_POST
def user_second_factor_remove(request, pk: int):
    """For a person who lost their app and their recovery codes: they sign
    in with their password alone until they set up another."""
    _managers_only(request)
    user = get_object_or_404(get_user_model(), pk=pk)
    if user.pk == request.user.pk:
        raise PermissionDenied("Your own second factors are removed on your Two-factor page.")
    second_factor.remove_all(user=user)
    messages.success(request, f"{user.get_username()}'s second factors are removed.")
    return redirect("web:users")


@login_required
def account(request):
    return render(
        request,
        "web/account.html",
        {
            "sessions": selectors.sessions_of(request.user),
            "current_key": request.session.session_key,
            "tokens": selectors.tokens_of(request.user),
            "has_factor": second_factor.has_second_factor(request.user),
        },
    )


class PasswordSetView(auth_views.PasswordResetConfirmView):
    """An invitation or a reset link (accounts.services.password_link)."""

    template_name = "web/password_set.html"
    success_url = reverse_lazy("web:sign-in")

    def form_valid(self, form):
        messages.success(self.request, "Your password is set: sign in with it.")
        return super().form_valid(form)


class PasswordChangeView(auth_views.PasswordChangeView):
    """Django's; a password chosen here ends the asking for one in place of
    a generated password (web.middleware.PasswordChangeDueMiddleware)."""

    template_name = "web/password_change.html"
    success_url = reverse_lazy("web:password-change-done")

    def form_valid(self, form):
        self.request.session.pop(PASSWORD_DUE_KEY, None)
        return super().form_valid(form)


class SignInView(auth_views.LoginView):
    """Django's sign-in; django-axes throttles it like every other way to
    sign in (slingshot/signin.py)."""

    template_name = "web/sign_in.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        if sso.enabled():
            context["sso"] = {"name": settings.OIDC_NAME, "reachable": sso.reachable()}
        # LOCAL_SIGNIN=false: the password form only for break-glass, asked for by ?local.
        context["passwords"] = settings.LOCAL_SIGNIN or "local" in self.request.GET or self.request.method == "POST"
        return context

    def form_valid(self, form):
        """A person with a second factor is asked for it before the session is theirs."""
        user = form.get_user()
        if second_factor.has_second_factor(user):
            self.request.session[second_factor.PENDING] = {
                "user": user.pk,
                "backend": user.backend,
                "at": time.time(),
                "next": self.get_success_url(),
            }
            return redirect("web:second-factor")
        second_factor.sign_in(self.request, user, backend=user.backend, how=second_factor.PASSWORD)
        return HttpResponseRedirect(self.get_success_url())

    def form_invalid(self, form):
        username = form.data.get("username", "")
        if not password_sign_in_open_to(username):
            form.errors.clear()
            form.add_error(None, f"Password sign-in is turned off here: sign in with {settings.OIDC_NAME}.")
        warning = signin.failures_left_warning(self.request, {"username": username})
        if warning:
            form.add_error(None, warning)
        return super().form_invalid(form)


@login_required
def time_zone(request):
    """The zone the pages show times and make days in. app.js posts the
    browser's zone with `guess` on a first visit, which never overrides a choice."""
    guess = request.method == "POST" and "guess" in request.POST
    form = forms.TimeZoneForm(forms.posted(request), initial={"time_zone": tz.get_current_timezone_name()})
    if request.method == "POST" and form.is_valid():
        preferences = web_services.preferences_set_time_zone(
            user=request.user, time_zone=form.cleaned_data["time_zone"], only_if_unset=guess
        )
        remember_time_zone(request, preferences.time_zone)
        if guess:
            return JsonResponse({"time_zone": preferences.time_zone})
        messages.success(request, f"Times are now shown in {preferences.time_zone}.")
        return redirect("web:time-zone")
    if guess:
        return JsonResponse({"errors": form.errors}, status=400)
    return render(request, "web/time_zone.html", {"form": form})
