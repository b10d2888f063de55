"""The accept benchmark's web server: the product's settings and routes plus the floor views
(``/bench/floor/accept``). Started with ``DJANGO_SETTINGS_MODULE=bench.floor_settings``; the
product itself has no route or setting for them."""

from __future__ import annotations

from config.settings import *  # noqa: F403 - the product's settings, all of them

ROOT_URLCONF = "bench.floor_urls"
