from __future__ import annotations

from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.models import Principal


def request_principal(request: Request) -> Principal:
    """The tenant principal of an API request that passed IsTenantMember."""
    if not isinstance(request.user, Principal):
        raise NotAuthenticated()
    return request.user


class IsTenantMember(BasePermission):
    """Every API call acts for exactly one tenant; anonymous callers get 401."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Principal)
