# Load the Celery app with Django, so shared tasks bind to it in every process.
from __future__ import annotations

from config.celery import app as celery_app

__all__ = ("celery_app",)
