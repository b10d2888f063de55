"""Routes of the accept benchmark's floor views, included under ``/bench/floor/`` when
``BENCH_FLOOR_VIEWS=1``."""

from __future__ import annotations

from django.urls import path

from bench import floor_views

urlpatterns = [
    path("accept", floor_views.accept_floor, name="bench-floor-accept"),
]
