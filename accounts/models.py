"""Who: tenants, their members and their API tokens."""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone

from config.sql import load_statements

SQL = load_statements(Path(__file__).with_suffix(".sql"))


def default_max_pending_jobs() -> int:
    return settings.TENANT_DEFAULT_MAX_PENDING_JOBS


def default_max_pending_bytes() -> int:
    return settings.TENANT_DEFAULT_MAX_PENDING_BYTES


def default_max_reserved_tokens() -> int:
    return settings.TENANT_DEFAULT_MAX_RESERVED_TOKENS


def default_daily_spend_micros() -> int:
    return settings.TENANT_DEFAULT_DAILY_SPEND_MICROS


def default_max_in_flight() -> int:
    return settings.TENANT_DEFAULT_MAX_IN_FLIGHT


def default_allowed_currencies() -> list[str]:
    return list(settings.TENANT_DEFAULT_ALLOWED_CURRENCIES)


def default_completion_target_seconds() -> int:
    return settings.TENANT_DEFAULT_COMPLETION_TARGET_SECONDS


class EInvoiceIntake(models.TextChoices):
    STRUCTURED_FIRST = "structured_first", "Read e-invoice XML exactly; the model for everything else"
    MODEL_ONLY = "model_only", "Send every document to the model, e-invoices too"
    BOTH = "both", "Read e-invoice XML exactly and have the model read it too; a disagreement goes to review"


class Tenant(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=63, unique=True)
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    # Admission limits (BP-1); defaults come from settings at creation, edited in the admin.
    max_pending_jobs = models.PositiveIntegerField(default=default_max_pending_jobs)
    max_pending_bytes = models.PositiveBigIntegerField(default=default_max_pending_bytes)
    max_reserved_tokens = models.PositiveBigIntegerField(default=default_max_reserved_tokens)
    daily_spend_limit_micros = models.PositiveBigIntegerField(
        default=default_daily_spend_micros,
        help_text="Estimated model spend allowed per UTC day, in millionths of the billing currency.",
    )

    # Fair scheduling (BP-4): a tenant's share of the workers is proportional to its weight,
    # and it never has more than max_in_flight jobs RUNNING at once.
    weight = models.PositiveSmallIntegerField(default=1, help_text="Relative share of worker capacity.")
    max_in_flight = models.PositiveIntegerField(
        default=default_max_in_flight, help_text="Most jobs of this tenant running at once."
    )
    # Validation policy (VAL-2): which ISO 4217 currencies invoices may use, and per-check
    # severities overriding the policy's defaults ({"check": "blocking" | "warning" | "off"}).
    allowed_currencies = models.JSONField(default=default_allowed_currencies, blank=True)
    validation_overrides = models.JSONField(default=dict, blank=True)
    # Owned by the database (extraction/functions.sql): raised in the transaction that changes
    # the two fields above or any of the tenant's suppliers, and never written by anything else
    # (a save() that sends an older value keeps the stored one). A worker caches the policy by
    # it, and a completion wins only under the revision it was judged with.
    policy_revision = models.BigIntegerField(
        default=1, db_default=1, editable=False, help_text="Raised by every change of the validation policy."
    )
    # A structured e-invoice (UBL, CII, Factur-X/ZUGFeRD) states its data exactly: read it
    # rather than pay a model to guess it, unless the tenant wants every document to a model.
    einvoice_intake = models.CharField(
        max_length=16,
        choices=EInvoiceIntake.choices,
        default=EInvoiceIntake.STRUCTURED_FIRST,
        help_text="Whether a document that is or embeds an e-invoice XML is read from it, with no model call.",
    )
    # The completion SLO (OPS-4): a job counts as completed in time when it reaches SUCCEEDED,
    # or a reviewer decides it, within this long of its acceptance (manage.py slo_report).
    completion_target_seconds = models.PositiveIntegerField(
        default=default_completion_target_seconds,
        help_text="Seconds from acceptance within which a job must succeed or be decided by a reviewer.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(weight__gte=1), name="tenant_weight_positive"),
            models.CheckConstraint(
                condition=Q(einvoice_intake__in=EInvoiceIntake.values), name="tenant_einvoice_intake_valid"
            ),
            models.CheckConstraint(
                condition=Q(completion_target_seconds__gt=0), name="tenant_completion_target_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.slug


class TenantUsage(models.Model):
    """Running totals that admission checks and moves with one guarded UPDATE.

    One row per tenant. Acceptance adds a job's bytes and token reservation in the same
    transaction that inserts the job; the transition to a terminal state takes them away.
    A COUNT over the jobs table would be exact too, but costs O(backlog) per request.
    """

    tenant = models.OneToOneField(Tenant, primary_key=True, on_delete=models.CASCADE, related_name="usage")
    pending_jobs = models.BigIntegerField(default=0)
    pending_bytes = models.BigIntegerField(default=0)
    reserved_tokens = models.BigIntegerField(default=0)
    spend_day = models.DateField(default=timezone.now)
    spent_today_micros = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(pending_jobs__gte=0) & Q(pending_bytes__gte=0) & Q(reserved_tokens__gte=0),
                name="tenant_usage_non_negative",
            ),
        ]


class Role(models.TextChoices):
    MEMBER = "member"
    REVIEWER = "reviewer"
    OPERATOR = "operator"
    ADMIN = "admin"


# Which roles include which powers; an admin can do everything an operator can, and so on.
ROLE_RANK = {Role.MEMBER: 0, Role.REVIEWER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}


def role_at_least(role: str, needed: str) -> bool:
    return ROLE_RANK[Role(role)] >= ROLE_RANK[Role(needed)]


class Membership(models.Model):
    """A user belongs to exactly one tenant, with one role."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(role__in=Role.values), name="membership_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant} ({self.role})"


TOKEN_PREFIX_LEN = 8


def hash_token(raw: str) -> str:
    # Tokens carry 256 bits of randomness, so a fast hash is enough: there is nothing to brute force.
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True)

    def find_active(self, raw: str) -> ApiToken | None:
        """The unrevoked token with this secret, and its tenant, in one small query.

        Every API request runs this, so it is plain SQL, without the ORM's query compilation.
        The tenant's other columns load on first access."""
        with connection.cursor() as cursor:
            cursor.execute(SQL["find_active_token"], {"hash": hash_token(raw)})
            row = cursor.fetchone()
        if row is None:
            return None
        token_id, tenant_id, role, last_used_at, slug, name = row
        token = ApiToken.from_db(
            self.db, ["id", "tenant_id", "role", "last_used_at"], [token_id, tenant_id, role, last_used_at]
        )
        token.tenant = Tenant.from_db(self.db, ["id", "slug", "name"], [tenant_id, slug, name])
        return token


class ApiToken(models.Model):
    """A tenant's API token. Only the SHA-256 of the secret is kept; the prefix stays visible
    so that a person can tell tokens apart and revoke one."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=TOKEN_PREFIX_LEN, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ADMIN)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(role__in=Role.values), name="api_token_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.tenant})"

    @classmethod
    def issue(cls, *, tenant: Tenant, name: str = "", role: str = Role.ADMIN) -> tuple[ApiToken, str]:
        """Create a token; the raw secret is returned once and never stored."""
        prefix = secrets.token_hex(TOKEN_PREFIX_LEN // 2)
        raw = f"dx_{prefix}_{secrets.token_urlsafe(32)}"
        token = cls.objects.create(tenant=tenant, name=name, prefix=prefix, token_hash=hash_token(raw), role=role)
        return token, raw

    def revoke(self) -> bool:
        """Guarded: True only for the call that actually revoked it."""
        return bool(ApiToken.objects.filter(pk=self.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()))

    def touch(self) -> None:
        """Record use, at most once per resolution window (the row count decides who writes)."""
        resolution = settings.API_TOKEN_LAST_USED_RESOLUTION_SECONDS
        now = timezone.now()
        if self.last_used_at and (now - self.last_used_at).total_seconds() < resolution:
            return
        ApiToken.objects.filter(pk=self.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(seconds=resolution))
        ).update(last_used_at=now)


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, a role, and the user or token that proved it."""

    tenant: Tenant
    role: str
    user_id: int | None = None
    token_id: int | None = None

    is_authenticated = True
    is_anonymous = False

    def has_role(self, needed: str) -> bool:
        return role_at_least(self.role, needed)


def create_tenant(*, slug: str, name: str = "") -> Tenant:
    tenant = Tenant.objects.create(slug=slug, name=name or slug)
    TenantUsage.objects.create(tenant=tenant)
    return tenant
