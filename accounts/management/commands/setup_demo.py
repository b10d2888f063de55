from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from accounts.models import ApiToken, EInvoiceIntake, Membership, Role, Tenant, create_tenant


class Command(BaseCommand):
    help = "Create (once) the demo tenant with an admin user, and print a fresh API token on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--slug", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo-password")
        parser.add_argument(
            "--einvoice-intake",
            choices=EInvoiceIntake.values,
            default=EInvoiceIntake.STRUCTURED_FIRST,
            help="model_only sends the demo's Factur-X PDFs to the model too (the local-model demo)",
        )

    def handle(self, *args: Any, slug: str, username: str, password: str, einvoice_intake: str, **options: Any) -> None:
        with transaction.atomic():
            tenant = Tenant.objects.filter(slug=slug).first() or create_tenant(slug=slug, name="Demo tenant")
            tenant.einvoice_intake = einvoice_intake
            tenant.save(update_fields=["einvoice_intake"])
            User = get_user_model()
            user = User.objects.filter(username=username).first()
            if user is None:
                user = User.objects.create_user(username=username, password=password, is_staff=True)
                Membership.objects.create(user=user, tenant=tenant, role=Role.ADMIN)
            token, raw = ApiToken.issue(tenant=tenant, name="demo", role=Role.ADMIN)
        self.stdout.write(f"Demo tenant: {tenant.slug}. Browser login: {username} / {password}")
        self.stdout.write(f"API token (prefix {token.prefix}), shown once:")
        self.stdout.write(raw)
