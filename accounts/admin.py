from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from accounts.models import ApiToken, Membership, Tenant, TenantUsage


class TenantUsageInline(admin.StackedInline):
    model = TenantUsage
    can_delete = False
    readonly_fields = ["pending_jobs", "pending_bytes", "reserved_tokens", "spend_day", "spent_today_micros"]


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = [
        "slug",
        "name",
        "max_pending_jobs",
        "max_pending_bytes",
        "max_reserved_tokens",
        "daily_spend_limit_micros",
        "created_at",
    ]
    search_fields = ["slug", "name"]
    inlines = [TenantUsageInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "tenant", "role", "revoked_at"]
    list_filter = ["role", "tenant"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "tenant", "name", "role", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["tenant", "role"]
    readonly_fields = ["prefix", "token_hash", "created_at", "last_used_at"]
    exclude = []

    def has_add_permission(self, request: HttpRequest) -> bool:
        # Tokens are issued with create_api_token, which shows the secret once.
        return False
