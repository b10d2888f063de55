"""Loaded by pytest before Django is configured (``-p tests.environment`` in pytest.ini):
tests run with development settings, against the real local services."""
import os

os.environ.setdefault("DJANGO_DEVELOPMENT", "1")
