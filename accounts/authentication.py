"""API authentication: ``Authorization: Bearer <token>`` for programs, the session for browsers.
Both yield a :class:`~accounts.models.Principal` bound to exactly one tenant."""

from __future__ import annotations

import threading
import time

from django.conf import settings
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from accounts.models import ApiToken, Membership, Principal, hash_token

# Recently seen tokens, per process: a busy client's requests skip the lookup. The price is
# that a revoked token keeps working for up to API_TOKEN_CACHE_SECONDS in a process that
# has just seen it (the revoke command says so).
_recent: dict[str, tuple[float, ApiToken]] = {}
_recent_lock = threading.Lock()
_RECENT_MAX = 10_000


def _lookup(raw: str, *, now: float | None = None) -> ApiToken | None:
    ttl = settings.API_TOKEN_CACHE_SECONDS
    if ttl <= 0:
        return ApiToken.objects.find_active(raw)
    key = hash_token(raw)
    now = time.monotonic() if now is None else now
    with _recent_lock:
        hit = _recent.get(key)
    if hit is not None and hit[0] > now:
        return hit[1]
    token = ApiToken.objects.find_active(raw)
    if token is not None:
        with _recent_lock:
            if len(_recent) >= _RECENT_MAX:
                _recent.clear()
            _recent[key] = (now + ttl, token)
    return token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Principal, ApiToken] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != self.keyword.lower():
            return None
        raw = raw.strip()
        if not raw or " " in raw:
            raise exceptions.AuthenticationFailed("Malformed bearer token.")
        token = _lookup(raw)
        if token is None:
            raise exceptions.AuthenticationFailed("Unknown or revoked token.")
        token.touch()
        return Principal(tenant=token.tenant, role=token.role, token_id=token.pk), token

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class TenantSessionAuthentication(authentication.SessionAuthentication):
    """The logged-in browser user, seen through their tenant membership (CSRF enforced)."""

    def authenticate(self, request: Request) -> tuple[Principal, None] | None:
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        membership = Membership.objects.select_related("tenant").filter(user=user, revoked_at__isnull=True).first()
        if membership is None:
            raise exceptions.PermissionDenied("This user belongs to no tenant.")
        return Principal(tenant=membership.tenant, role=membership.role, user_id=user.pk), None
