from __future__ import annotations

from django.apps import AppConfig


class ErpConfig(AppConfig):
    """The reference ERP (a stand-in for the integrator's system): installed only when
    ``DEMO_ERP`` is on, so production databases never get its tables."""

    name = "delivery.erp"
    label = "erp"
    verbose_name = "Reference ERP (demo)"
    default_auto_field = "django.db.models.BigAutoField"
