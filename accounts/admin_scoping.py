"""Admin access by tenant membership instead of Django's model permissions: a staff user sees
their own tenant's rows with what their role allows; a superuser sees every tenant. Every app's
admin builds on this."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from accounts.models import Membership, Role, role_at_least


def staff_membership(request: HttpRequest) -> Membership | None:
    """The staff user's live membership, read once per request."""
    user = request.user
    if not user.is_authenticated or not user.is_staff:
        return None
    cache: dict[str, Membership | None] = request.__dict__.setdefault("_tenant_membership", {})
    if "membership" not in cache:
        cache["membership"] = (
            Membership.objects.filter(user_id=user.pk, revoked_at__isnull=True).select_related("tenant").first()
        )
    return cache["membership"]


def has_role(request: HttpRequest, needed: str) -> bool:
    if request.user.is_active and request.user.is_superuser:
        return True
    membership = staff_membership(request)
    return membership is not None and role_at_least(membership.role, needed)


def in_tenant(request: HttpRequest, tenant_id: Any) -> bool:
    if request.user.is_superuser:
        return True
    membership = staff_membership(request)
    return membership is not None and membership.tenant_id == tenant_id


class TenantScopedAdmin(admin.ModelAdmin):
    """Rows of the user's tenant only; access by membership role (``view_role``/``edit_role``)."""

    tenant_field = "tenant"
    view_role = Role.REVIEWER
    edit_role: str | None = None

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        membership = staff_membership(request)
        if membership is None:
            return queryset.none()
        return queryset.filter(**{f"{self.tenant_field}_id": membership.tenant_id})

    def tenant_id_of(self, obj: Model) -> Any:
        for part in self.tenant_field.split("__")[:-1]:
            obj = getattr(obj, part)
        return getattr(obj, f"{self.tenant_field.split('__')[-1]}_id")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return has_role(request, self.view_role)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return has_role(request, self.view_role) and (obj is None or in_tenant(request, self.tenant_id_of(obj)))

    def may_edit(self, request: HttpRequest, obj: Any = None) -> bool:
        return (
            self.edit_role is not None
            and has_role(request, self.edit_role)
            and (obj is None or in_tenant(request, self.tenant_id_of(obj)))
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.may_edit(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_edit(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_edit(request, obj)
