from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from accounts.models import Principal

if TYPE_CHECKING:  # rest_framework.views imports the permission classes named in settings: this module
    from rest_framework.views import APIView


def request_principal(request: Request) -> Principal:
    """The tenant principal of an API request that passed IsTenantMember."""
    if not isinstance(request.user, Principal):
        raise NotAuthenticated()
    return request.user


class IsTenantMember(BasePermission):
    """Every API call acts for exactly one tenant; anonymous callers get 401."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        return isinstance(request.user, Principal)
