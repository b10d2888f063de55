"""The reference ERP's tables in the Django admin: another system's data, read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.admin_scoping import staff_membership
from delivery.erp.models import ErpConnection, ErpInboxEntry, ErpLedgerEntry


class ErpAdmin(admin.ModelAdmin):
    """The reference ERP's tables: another system's data, read-only. A superuser sees every
    connection; a tenant's staff member sees the demo connection named after their tenant."""

    connection_field = "connection_id"

    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and (request.user.is_superuser or staff_membership(request) is not None)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.has_module_permission(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        membership = staff_membership(request)
        return queryset.filter(**{self.connection_field: membership.tenant.slug}) if membership else queryset.none()

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ErpLedgerEntry)
class ErpLedgerEntryAdmin(ErpAdmin):
    list_display = [
        "posted_at",
        "connection",
        "invoice_number",
        "supplier_name",
        "currency",
        "total",
        "job_id",
        "delivery_id",
    ]
    ordering = ["-posted_at"]


@admin.register(ErpInboxEntry)
class ErpInboxEntryAdmin(ErpAdmin):
    list_display = ["received_at", "connection", "event_type", "delivery_id", "body_sha256"]
    ordering = ["-received_at"]


@admin.register(ErpConnection)
class ErpConnectionAdmin(ErpAdmin):
    connection_field = "slug"
    list_display = ["slug", "tenant_label", "created_at"]
    exclude = ["secrets"]
