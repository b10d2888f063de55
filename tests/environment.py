"""Loaded by pytest before Django is configured (``-p tests.environment`` in pytest.ini):
tests run with development settings, against the real local services, in their own Redis
databases so a running development system and the tests never share a capacity budget."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_DEVELOPMENT", "1")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/1")
os.environ.setdefault("CHANNELS_REDIS_URL", "redis://127.0.0.1:6379/3")
# The reference ERP (delivery.erp) is the real receiver the delivery tests post to.
os.environ.setdefault("DEMO_ERP", "1")
# Revocation tests expect the next request to see it: no per-process token cache by default
# (tests/accounts/test_tokens.py covers the cache with its own setting).
os.environ.setdefault("API_TOKEN_CACHE_SECONDS", "0")
