"""The Django admin for delivery: a tenant's webhook endpoints (register, verify, disable,
reset the circuit) and their deliveries with every attempt (redeliver by selection).

Access follows the tenant membership like the extraction admin: operators see, admins edit.
A secret is shown once, in the message after registration, and never again.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.admin_scoping import TenantScopedAdmin, has_role, staff_membership
from accounts.models import Role
from delivery import endpoints, redelivery, replay
from delivery.models import (
    SUBSCRIBABLE_TYPES,
    Delivery,
    DeliveryAttempt,
    DeliveryState,
    WebhookEndpoint,
)
from extraction.bulk import actions as bulk


class EndpointForm(forms.ModelForm):
    event_types = forms.MultipleChoiceField(
        choices=[(t, t) for t in SUBSCRIBABLE_TYPES], widget=forms.CheckboxSelectMultiple
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["tenant", "url", "event_types", "description"]

    def clean_url(self) -> str:
        try:
            return endpoints.vet_endpoint_url(self.cleaned_data["url"])
        except endpoints.InvalidEndpoint as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(TenantScopedAdmin):
    form = EndpointForm
    view_role = Role.OPERATOR
    edit_role = Role.ADMIN
    list_display = ["url", "tenant", "status", "circuit_state", "consecutive_failures", "verified_at", "created_at"]
    list_filter = ["status", "circuit_state"]
    search_fields = ["url", "id"]
    ordering = ["-created_at"]
    actions = ["send_verification", "reset_circuit", "disable"]
    readonly_fields = [
        "status",
        "disabled_reason",
        "verified_at",
        "consecutive_failures",
        "auth_failures",
        "failing_since",
        "circuit_state",
        "circuit_open_until",
        "retry_not_before",
        "signing_keys",
    ]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = ["url", "event_types", "description"]
        if request.user.is_superuser and obj is None:
            fields.insert(0, "tenant")
        return fields + ([] if obj is None else self.readonly_fields)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        # The URL of a registered endpoint does not change: register a new one (new verification).
        return [] if obj is None else ["url", *self.readonly_fields]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # "disable" keeps the delivery history

    @admin.display(description="signing keys")
    def signing_keys(self, endpoint: WebhookEndpoint) -> str:
        return ", ".join(
            f"{s.key_id} (until {s.expires_at:%Y-%m-%d %H:%M})" if s.expires_at else s.key_id
            for s in endpoint.secrets.order_by("-created_at")
        )

    def save_model(self, request: HttpRequest, obj: WebhookEndpoint, form, change: bool) -> None:
        if change:
            obj.save(update_fields=["event_types", "description"])
            return
        tenant = form.cleaned_data.get("tenant") if request.user.is_superuser else staff_membership(request).tenant
        registration = endpoints.register_endpoint(
            tenant=tenant,
            url=form.cleaned_data["url"],
            event_types=form.cleaned_data["event_types"],
            description=form.cleaned_data.get("description", ""),
        )
        obj.pk = registration.endpoint.pk
        messages.warning(
            request,
            f"Signing secret {registration.secret.key_id}, shown only now: "
            f"{registration.secret.secret} — a signed verification event was sent.",
        )

    @admin.action(description="Send a verification event (re-activates on 2xx)")
    def send_verification(self, request: HttpRequest, queryset: QuerySet) -> None:
        for endpoint in queryset:
            try:
                endpoints.request_verification(endpoint)
            except endpoints.InvalidEndpoint as exc:
                messages.error(request, f"{endpoint.url}: {exc}")
        messages.info(request, "Verification events queued.")

    @admin.action(description="Reset the circuit breaker (send again now)")
    def reset_circuit(self, request: HttpRequest, queryset: QuerySet) -> None:
        for endpoint in queryset:
            endpoints.reset_circuit(endpoint)

    @admin.action(description="Disable")
    def disable(self, request: HttpRequest, queryset: QuerySet) -> None:
        for endpoint in queryset:
            endpoints.disable_endpoint(endpoint, reason=f"Disabled in the admin by {request.user}.")


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    fields = [
        "number",
        "started_at",
        "ended_at",
        "outcome",
        "http_status",
        "retry_after_seconds",
        "elapsed_ms",
        "error",
        "response_snippet",
    ]
    readonly_fields = fields
    ordering = ["number"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Delivery)
class DeliveryAdmin(TenantScopedAdmin):
    view_role = Role.OPERATOR
    list_display = [
        "id",
        "event_type",
        "endpoint",
        "state",
        "attempts",
        "last_status",
        "next_attempt_at",
        "delivered_at",
        "created_at",
    ]
    list_filter = ["state", "event_type", "is_verification"]
    search_fields = ["id", "event__event_id", "event__job_id"]
    ordering = ["-created_at"]
    list_select_related = ["endpoint"]
    inlines = [DeliveryAttemptInline]
    actions = ["redeliver"]
    readonly_fields = [
        "id",
        "event",
        "endpoint",
        "tenant",
        "event_type",
        "is_verification",
        "state",
        "attempts",
        "max_attempts",
        "next_attempt_at",
        "lease_until",
        "last_status",
        "last_error",
        "response_snippet",
        "delivered_at",
        "created_at",
        "updated_at",
    ]

    @admin.action(description="Redeliver (same webhook-id; failed or delivered ones)")
    def redeliver(self, request: HttpRequest, queryset: QuerySet) -> None:
        if not has_role(request, Role.OPERATOR):
            messages.error(request, "Redelivery needs the operator role.")
            return
        actor = bulk.Actor(name=f"user:{request.user.get_username()}", channel="admin")
        by_tenant: dict[Any, list[Any]] = {}
        for delivery_id, tenant_id in queryset.values_list("pk", "tenant_id"):
            by_tenant.setdefault(tenant_id, []).append(delivery_id)
        for tenant_id, delivery_ids in by_tenant.items():
            report = redelivery.redeliver_webhooks(
                replay.DeliveryFilter(
                    tenant_id=tenant_id,
                    delivery_ids=tuple(delivery_ids),
                    states=(DeliveryState.FAILED, DeliveryState.DELIVERED),
                ),
                tenant_id=tenant_id,
                actor=actor,
            )
            messages.info(
                request,
                f"{report.outcomes.get(bulk.CHANGED, 0)} deliveries queued again (pending and in-flight ones are "
                f"left alone; operator action {report.action_id}).",
            )
