"""API authentication: ``Authorization: Bearer <token>`` for programs, the session for browsers.
Both yield a :class:`~accounts.models.Principal` bound to exactly one tenant."""
from __future__ import annotations

from rest_framework import authentication, exceptions

from .models import ApiToken, Membership, Principal, hash_token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        raw = raw.strip()
        if not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Malformed bearer token.")
        token = (
            ApiToken.objects.active().select_related("tenant").filter(token_hash=hash_token(raw)).first()
        )
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        token.touch()
        return Principal(tenant=token.tenant, role=token.role, token_id=token.pk), token

    def authenticate_header(self, request) -> str:
        return f'{self.keyword} realm="api"'


class TenantSessionAuthentication(authentication.SessionAuthentication):
    """The logged-in browser user, seen through their tenant membership (CSRF enforced)."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        membership = (
            Membership.objects.select_related("tenant").filter(user=user, revoked_at__isnull=True).first()
        )
        if membership is None:
            raise exceptions.PermissionDenied("This user belongs to no tenant.")
        return Principal(tenant=membership.tenant, role=membership.role, user_id=user.pk), None
