from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiToken, Role, Tenant


class Command(BaseCommand):
    help = "Create another API token for a tenant. The token alone is printed on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--role", choices=Role.values, default=Role.ADMIN)

    def handle(self, *args: Any, slug: str, name: str, role: str, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}.")
        token, raw = ApiToken.issue(tenant=tenant, name=name, role=role)
        self.stdout.write(f"Token prefix {token.prefix} for tenant {tenant.slug}, role {role}. Shown once:")
        self.stdout.write(raw)
