"""ASGI entry point, served by daphne (the ``ws`` process of the Procfile).

The HTTP API runs under gunicorn's sync workers; daphne serves what keeps a connection open:
the ``/ws/jobs/`` WebSocket and the ``/api/v1/job-events/stream`` SSE stream. Every other
HTTP path falls through to Django, so daphne alone can also serve the whole site.
"""
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from extraction.consumers import JobEventsConsumer  # noqa: E402
from extraction.sse import JobEventStreamConsumer  # noqa: E402

application = ProtocolTypeRouter({
    "http": URLRouter([
        path("api/v1/job-events/stream", AuthMiddlewareStack(JobEventStreamConsumer.as_asgi())),
        re_path(r"", django_asgi_app),
    ]),
    # Origin checked against ALLOWED_HOSTS: cookies ride along on cross-site WebSocket opens
    # (cross-site WebSocket hijacking).
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter([
        path("ws/jobs/", JobEventsConsumer.as_asgi()),
    ]))),
})
