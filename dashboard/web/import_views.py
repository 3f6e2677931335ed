"""CSV import of links: the upload, its preview, and the import in chunks (links/imports.py)."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from links import imports
from links.models import LinkImport

from . import link_list_forms
from .teams import current_team
from .uploads import UploadLimitHandler, limit_uploads


@login_required
@limit_uploads("WEB_IMPORT_MAX_BYTES")
def link_import(request, limit: UploadLimitHandler):
    if request.method != "POST":
        return render(request, "web/link_import.html", {"form": link_list_forms.CsvUploadForm()})
    form = link_list_forms.CsvUploadForm(request.POST, request.FILES, too_large="file" in limit.too_large)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            link_import = imports.import_upload(
                owner=request.user, team=current_team(request), filename=upload.name, content=upload.read()
            )
        except ValidationError as exc:
            form.add_error("file", exc)
        else:
            return redirect("web:link-import-detail", pk=link_import.pk)
    return render(request, "web/link_import.html", {"form": form})


@login_required
def link_import_detail(request, pk: int):
    link_import = get_object_or_404(LinkImport, pk=pk, owner=request.user)
    rows = link_import.rows
    valid = [row for row in rows if not row["errors"]]
    # The preview shows the columns the file fills, so that it fits the page.
    preview = valid[:20]
    columns = [name for name in imports.CSV_COLUMNS if any(row["fields"].get(name) for row in preview)]
    # Rows still to come whose expiry has passed: created only if the person says so.
    expired = [row for row in rows[link_import.position :] if row.get("warnings") and not row["errors"]]
    return render(
        request,
        "web/link_import_detail.html",
        {
            "import": link_import,
            "columns": columns,
            "valid": len(valid),
            "error_rows": [row for row in rows if row["errors"]][:500],
            "expired_rows": expired[:500],
            "expired_count": len(expired),
            "preview_rows": [
                (row["line"], [(name, row["fields"].get(name, "")) for name in columns]) for row in preview
            ],
        },
    )


@login_required
@require_POST
def link_import_run(request, pk: int):
    link_import = imports.import_run_chunk(
        link_import=get_object_or_404(LinkImport, pk=pk, owner=request.user),
        expired_ok=request.POST.get("expired_ok") == "on",
    )
    if request.headers.get("Accept") == "application/json":
        return JsonResponse(
            {
                "position": link_import.position,
                "total": link_import.total,
                "created": link_import.created,
                "failed": link_import.failed,
                "done": link_import.done,
            }
        )
    return redirect("web:link-import-detail", pk=link_import.pk)
