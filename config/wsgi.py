from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import every view now, then move everything loaded so far out of the garbage collector's
# reach: a full collection over the start-up objects is long, and the web workers forked from
# this state would pause for it together under load.
get_resolver().url_patterns  # noqa: B018 - the access imports every URLconf and view module
gc.collect()
gc.freeze()
