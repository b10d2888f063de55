from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks


class ExtractionConfig(AppConfig):
    name = "extraction"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(model_policies_name_known_readings)


def model_policies_name_known_readings(**_kwargs: Any) -> list[checks.CheckMessage]:
    """A policy's ``reading`` mistyped would otherwise surface as a failed attempt after a paid
    model call; ``manage.py check`` (and every command that runs the checks) names it first."""
    from extraction.validation.readings import ReadingMode

    known = {mode.value for mode in ReadingMode}
    return [
        checks.Error(
            f"MODEL_POLICIES[{name!r}]['reading'] is {policy['reading']!r}",
            hint=f"One of: {', '.join(sorted(known))}.",
            id="extraction.E001",
        )
        for name, policy in settings.MODEL_POLICIES.items()
        if policy.get("reading", "model") not in known
    ]
