from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, transaction

from accounts.models import ApiToken, Role, create_tenant


class Command(BaseCommand):
    help = "Create a tenant and its first API token. The token alone is printed on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--role", choices=Role.values, default=Role.ADMIN)

    def handle(self, *args: Any, slug: str, name: str, role: str, **options: Any) -> None:
        try:
            with transaction.atomic():
                tenant = create_tenant(slug=slug, name=name)
                token, raw = ApiToken.issue(tenant=tenant, name="initial", role=role)
        except IntegrityError as exc:
            raise CommandError(f"Tenant {slug!r} already exists.") from exc
        self.stdout.write(f"Created tenant {tenant.slug} ({tenant.pk}); token prefix {token.prefix}, role {role}.")
        self.stdout.write("The token is shown once:")
        self.stdout.write(raw)
