from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import ApiToken


class Command(BaseCommand):
    help = "Revoke an API token by its visible prefix."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix")

    def handle(self, *args: Any, prefix: str, **options: Any) -> None:
        token = ApiToken.objects.filter(prefix=prefix).first()
        if token is None:
            raise CommandError(f"No token with prefix {prefix!r}.")
        if not token.revoke():
            raise CommandError(f"Token {prefix} was already revoked.")
        self.stdout.write(
            f"Revoked token {prefix} of tenant {token.tenant.slug}. Web processes that verified it in"
            f" the last {settings.API_TOKEN_CACHE_SECONDS:g} s accept it until then; open"
            " WebSocket streams close within their re-check interval."
        )
