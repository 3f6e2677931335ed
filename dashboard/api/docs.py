"""The API's interactive docs, Swagger UI and Redoc, from the local copies
in drf-spectacular-sidecar, under the dashboard's Content-Security-Policy
(slingshot/settings/security.py, CONTENT_SECURITY_POLICY).

Swagger UI fits it as it is: SpectacularSwaggerSplitView serves the script
that starts it from a URL of its own (`?script`) rather than inline, and
api/swagger_ui.html moves the page's inline stylesheet to api/docs.css.

Redoc does not: its bundle adds <style> elements as it renders
(styled-components) and runs its search in a worker made from a blob: URL.
Its page alone allows inline styles and blob: workers; its scripts are
still only its own. api/redoc.html leaves out Google Fonts. The one thing
the policy still refuses there is the Redocly logo, which Redoc always
loads from its CDN and hides when that fails: no visitor of the docs is
sent to a third party for it.
"""

from csp.constants import SELF, UNSAFE_INLINE
from csp.decorators import csp_update
from drf_spectacular.views import SpectacularRedocView, SpectacularSwaggerSplitView

swagger_ui = SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger_ui.html")

redoc = csp_update({"style-src": [UNSAFE_INLINE], "worker-src": [SELF, "blob:"]})(
    SpectacularRedocView.as_view(url_name="api-schema", template_name="api/redoc.html")
)
