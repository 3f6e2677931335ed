"""A short domain's report page (/report): a visitor reports a short URL
with a reason, no account needed. The edge passes it here as
/internal/report with the edges' secret, the visitor's address, and the
host and scheme asked for (nginx.conf, docs/contract.md); it is answered
ahead of the rest of the middleware, as the YOURLS API's edge door is.

A post from another site is refused (403): its Origin must be the short
domain's own, or the browser must say it is same-origin. Each address may
send REPORT_RATE reports."""

import base64
import hashlib
import ipaddress
import re
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string

from clicks.enrichment import anonymise
from links.domains import domain_for_host
from links.models import Domain, Link
from links.slugs import PATTERN
from slingshot.edges import EdgePassMiddleware
from slingshot.text import unstorable
from slingshot.throttle import address_caller, admit

from .models import Reason, Report

EDGE_PATH = "/internal/report"

# The page's one style block, allowed by its hash alone.
STYLE = (
    "body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1f2328;background:#f6f8fa}"
    "main{max-width:28rem;margin:8vh auto;padding:1.5rem;background:#fff;border:1px solid #d0d7de;border-radius:8px}"
    "h1{font-size:1.25rem;margin:0 0 1rem}label{display:block;font-weight:600;margin:.75rem 0 .25rem}"
    "input,select,textarea{box-sizing:border-box;width:100%;font:inherit;padding:.5rem;"
    "border:1px solid #8c959f;border-radius:6px}"
    "button{margin-top:1rem;width:100%;font:inherit;padding:.5rem;border:0;border-radius:6px;"
    "background:#0969da;color:#fff;cursor:pointer}.error,.errorlist{color:#cf222e;font-weight:600}"
    ".errorlist{list-style:none;padding:0;margin:.25rem 0}"
    "@media (max-width:30rem){main{margin:0;border:0;border-radius:0;min-height:100vh;box-sizing:border-box}}"
)
CSP = (
    "default-src 'none'; style-src 'sha256-"
    + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
    + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


class ReportForm(forms.Form):
    url = forms.CharField(label="Short URL", max_length=500)
    reason = forms.ChoiceField(label="What is wrong with it", choices=Reason.choices)
    details = forms.CharField(
        label="Details (optional)", max_length=2000, required=False, widget=forms.Textarea(attrs={"rows": 4})
    )
    email = forms.EmailField(label="Your email, if we may ask you more (optional)", max_length=254, required=False)

    def clean_url(self) -> str:
        text = self.cleaned_data["url"].strip()
        if unstorable(text):
            raise forms.ValidationError("That is not a short URL.")
        parts = urlsplit(text if "://" in text else "https://" + text)
        slug = parts.path.strip("/")
        try:
            domain = domain_for_host(parts.hostname or "")
        except Domain.DoesNotExist:
            raise forms.ValidationError("That is not a short URL of this service.") from None
        link = Link.objects.filter(domain=domain, slug=slug).first() if re.fullmatch(PATTERN, slug) else None
        if link is None:
            raise forms.ValidationError("There is no short link at that address.")
        self.link, self.host = link, domain.host
        return text


def _page(request: HttpRequest, template: str, context: dict, status: int = 200) -> HttpResponse:
    body = render_to_string(template, {"style": STYLE, **context})
    response = HttpResponse(body, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = CSP  # the edge adds Cache-Control, as to all it answers
    return response


def _cross_site(request: HttpRequest) -> bool:
    """Whether a post came from a page of another site."""
    fetch_site = request.headers.get("Sec-Fetch-Site", "")
    if fetch_site and fetch_site not in ("same-origin", "none"):
        return True
    origin = request.headers.get("Origin", "")
    if not origin:
        return False
    scheme = request.headers.get("X-Slingshot-Scheme", "http")
    host = request.headers.get("X-Slingshot-Host", "")
    mine = urlsplit(f"{scheme}://{host}")
    theirs = urlsplit(origin)
    return (theirs.scheme, theirs.hostname) != (mine.scheme, mine.hostname)


def report_page(request: HttpRequest, address: str) -> HttpResponse:
    if request.method not in ("GET", "HEAD", "POST"):
        return _page(request, "moderation/report.html", {"form": ReportForm()}, status=405)
    if request.method != "POST":
        form = ReportForm(initial={"url": request.GET.get("url", "")[:500]})
        return _page(request, "moderation/report.html", {"form": form})
    if _cross_site(request):
        return _page(request, "moderation/report_refused.html", {"why": "cross-site"}, status=403)
    # Every post counts, a refused one too: the form is no way to try slugs.
    allowed, retry_after = admit(address_caller(f"report-{address}"), settings.REPORT_RATE)
    if not allowed:
        response = _page(request, "moderation/report_refused.html", {"why": "rate"}, status=429)
        response["Retry-After"] = str(max(1, round(retry_after)))
        return response
    form = ReportForm(request.POST)
    if not form.is_valid():
        return _page(request, "moderation/report.html", {"form": form}, status=400)
    data = form.cleaned_data
    Report.objects.create(
        short_url=data["url"],
        host=form.host,
        slug=form.link.slug,
        link=form.link,
        reason=data["reason"],
        details=data["details"],
        email=data["email"],
        address=anonymise(ipaddress.ip_address(address)),
    )
    return _page(request, "moderation/report_sent.html", {})


class EdgeReportMiddleware(EdgePassMiddleware):
    """An edge's pass of a short domain's /report."""

    path, label = EDGE_PATH, "report"

    def answer(self, request: HttpRequest, address: str) -> HttpResponse:
        return report_page(request, address)
