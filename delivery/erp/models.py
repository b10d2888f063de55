"""The reference ERP's own tables (DLV-3): where it keeps its sender configuration, its
durable inbox and its ledger. Nothing here is shared with the sending side."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now


class ErpConnection(models.Model):
    """The ERP's trusted configuration of one sender: the receiving URL's slug names it, and
    the tenant of every event it accepts is this row's, never the payload's."""

    slug = models.SlugField(max_length=63, primary_key=True)
    tenant_label = models.CharField(max_length=200)
    # [{"key_id": ..., "secret": "whsec_..."}]: the secrets the sender showed once, as an
    # integrator pastes them into the ERP (one during normal operation, two in a rotation).
    secrets = models.JSONField(default=list)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        app_label = "erp"
        db_table = "erp_connections"

    def __str__(self) -> str:
        return self.slug


class ErpInboxEntry(models.Model):
    """One row per ``webhook-id`` ever accepted, with the digest of its body: a redelivery
    is recognised, and a reused id with another body is refused (DLV-3)."""

    delivery_id = models.CharField(max_length=64, primary_key=True)
    connection = models.ForeignKey(ErpConnection, on_delete=models.CASCADE, related_name="inbox")
    body_sha256 = models.CharField(max_length=64)
    event_type = models.CharField(max_length=64)
    received_at = models.DateTimeField(db_default=Now())

    class Meta:
        app_label = "erp"
        db_table = "erp_inbox"
        verbose_name_plural = "ERP inbox entries"


class ErpLedgerEntry(models.Model):
    """The ERP effect: an extracted invoice posted once per job (its own idempotency key)."""

    id = models.BigAutoField(primary_key=True)
    connection = models.ForeignKey(ErpConnection, on_delete=models.CASCADE, related_name="ledger")
    job_id = models.UUIDField()
    delivery_id = models.CharField(max_length=64)
    state_version = models.PositiveIntegerField()
    invoice_number = models.CharField(max_length=128, blank=True, default="")
    supplier_name = models.CharField(max_length=256, blank=True, default="")
    currency = models.CharField(max_length=3, blank=True, default="")
    total = models.CharField(max_length=32, blank=True, default="", help_text="As extracted, a decimal string.")
    posted_at = models.DateTimeField(db_default=Now())

    class Meta:
        app_label = "erp"
        db_table = "erp_ledger"
        verbose_name_plural = "ERP ledger entries"
        constraints = [
            models.UniqueConstraint(fields=["connection", "job_id"], name="erp_ledger_one_posting_per_job"),
        ]
