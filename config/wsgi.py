import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Import every view now, then move everything loaded so far out of the garbage collector's
# reach: a full collection over the ~200,000 start-up objects took 150–220 ms, and the web
# workers (forked from this state) paused together under load (bench/README.md).
get_resolver().url_patterns
gc.collect()
gc.freeze()
