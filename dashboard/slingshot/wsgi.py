"""The dashboard's WSGI application, as gunicorn's master loads it before it
forks the workers (preload_app, dashboard/gunicorn.conf.py).

It refuses to start on a database of another schema (slingshot/schema.py),
and closes the connection it checked with, which no worker may share.
Once Django, the URLconf and the views are loaded, everything made so far
moves out of the garbage collector's sight (gc.freeze): those objects live
as long as the workers do, a full collection would otherwise walk all of
them on a request now and then, and its writes to their headers would copy
the pages the workers share with the master."""

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "slingshot.settings")
application = get_wsgi_application()

from django.db import connection  # noqa: E402 -- after the settings are configured
from django.urls import get_resolver  # noqa: E402

from slingshot.schema import check_schema  # noqa: E402

check_schema(connection)  # a worker does not boot against a database of another version
connection.close()
_ = get_resolver().url_patterns  # imports every view module now, rather than on the first request
gc.freeze()
