"""Point a tenant's webhooks at this installation's reference ERP, for the local demo
(``EGRESS_ALLOW_LOOPBACK=1 manage.py setup_demo_erp demo --base-url http://127.0.0.1:8000``).
Registers ``<base-url>/erp/<tenant>/webhooks``, hands its secret to the ERP's connection as an
integrator would, and answers the signed verification here, waiting up to ``--wait`` seconds.
Idempotent: an active endpoint for that URL whose secret the ERP holds is kept.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Tenant
from delivery import dispatch, endpoints, replay
from delivery.erp.models import ErpConnection
from delivery.models import SUBSCRIBABLE_TYPES, EndpointStatus, WebhookEndpoint


class Command(BaseCommand):
    help = "Register and verify a webhook endpoint pointing at the local reference ERP (needs EGRESS_ALLOW_LOOPBACK=1)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tenant", help="tenant slug")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")
        parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait for the web process")

    def handle(self, *args: Any, tenant: str, base_url: str, wait: float, **options: Any) -> None:
        owner = Tenant.objects.filter(slug=tenant).first()
        if owner is None:
            raise CommandError(f"no tenant {tenant!r}")
        url = f"{base_url.rstrip('/')}/erp/{owner.slug}/webhooks"
        endpoint = (
            WebhookEndpoint.objects.filter(tenant=owner, url=url)
            .exclude(status=EndpointStatus.DISABLED)
            .order_by("-created_at")
            .first()
        )
        erp = ErpConnection.objects.filter(slug=owner.slug).first()
        if endpoint is not None and endpoint.status == EndpointStatus.ACTIVE and erp is not None and erp.secrets:
            self.stdout.write(f"Demo ERP endpoint {endpoint.pk} already active: {url}")
            return
        if endpoint is None:
            try:
                registration = endpoints.register_endpoint(
                    tenant=owner, url=url, event_types=list(SUBSCRIBABLE_TYPES), description="Reference ERP (demo)"
                )
            except endpoints.InvalidEndpoint as exc:
                raise CommandError(f"{exc} (the demo needs EGRESS_ALLOW_LOOPBACK=1)") from exc
            endpoint, secret = registration.endpoint, registration.secret
        else:
            secret, _ = endpoints.rotate_secret(endpoint)  # the old secret was shown once and is gone
        ErpConnection.objects.update_or_create(
            slug=owner.slug,
            defaults={"tenant_label": owner.name, "secrets": [{"key_id": secret.key_id, "secret": secret.secret}]},
        )

        verification = endpoints.request_verification(endpoint)
        deadline = time.monotonic() + wait
        while True:
            outcome = dispatch.deliver(verification)
            endpoint.refresh_from_db()
            if endpoint.status == EndpointStatus.ACTIVE:
                break
            if time.monotonic() > deadline:
                raise CommandError(
                    f"the ERP at {url} did not answer the verification ({outcome}); the dispatcher keeps retrying it"
                )
            time.sleep(1.0)
            replay.expedite(verification)
        self.stdout.write(f"Demo ERP endpoint {endpoint.pk} verified and active: {url}")
