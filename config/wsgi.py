from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from config.tracing import configure_tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Before the application is built: the Django instrumentation adds its middleware to the
# settings. gunicorn (no --preload) imports this module in each worker after the fork, so the
# span exporter's thread starts in the process that records.
configure_tracing("web")
application = get_wsgi_application()

# Import every view now, then move everything loaded so far out of the garbage collector's
# reach: a full collection over the start-up objects is long, and the web workers forked from
# this state would pause for it together under load.
get_resolver().url_patterns  # noqa: B018 - the access imports every URLconf and view module
gc.collect()
gc.freeze()
