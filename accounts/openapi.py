"""How the API's two ways in appear in the OpenAPI schema (drf-spectacular finds these
extensions when this module is imported, from AccountsConfig.ready)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An API token issued for one tenant (dx_…)."}


class TenantSessionScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.TenantSessionAuthentication"
    name = "sessionCookie"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": "A browser session of a tenant member (CSRF-protected).",
        }
