from __future__ import annotations

from rest_framework.permissions import BasePermission

from accounts.models import Principal


class IsTenantMember(BasePermission):
    """Every API call acts for exactly one tenant; anonymous callers get 401."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, Principal)
