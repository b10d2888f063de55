"""The review tests' tenants, shared by every module here (defined beside the job helpers)."""

from __future__ import annotations

from tests.extraction.review.test_review import committed_tenant, elektron_buyer  # noqa: F401
