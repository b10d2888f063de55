"""The accept benchmark's routes (bench/floor_settings.py): the product's, and its floor views
under ``/bench/floor/``."""

from __future__ import annotations

from django.urls import path

from bench import floor_views
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401 - the product's error pages
from config.urls import urlpatterns as product_urlpatterns

urlpatterns = [
    *product_urlpatterns,
    path("bench/floor/accept", floor_views.accept_floor, name="bench-floor-accept"),
]
