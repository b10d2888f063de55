"""Shared fixtures. Tests run against the real PostgreSQL (and, where they need them, the real
RabbitMQ and Redis); nothing here mocks the ORM, the broker or a neighbour module."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from accounts.models import ApiToken, Role, Tenant, create_tenant


@dataclass
class TenantContext:
    tenant: Tenant
    token: str
    client: APIClient


def make_tenant_context(slug: str, role: str = Role.ADMIN, **limits) -> TenantContext:
    tenant = create_tenant(slug=slug)
    if limits:
        Tenant.objects.filter(pk=tenant.pk).update(**limits)
        tenant.refresh_from_db()
    _, raw = ApiToken.issue(tenant=tenant, role=role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return TenantContext(tenant=tenant, token=raw, client=client)


@pytest.fixture
def tenant_a(db) -> TenantContext:
    return make_tenant_context("tenant-a")


@pytest.fixture
def tenant_b(db) -> TenantContext:
    return make_tenant_context("tenant-b")


@pytest.fixture(autouse=True)
def _media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture(autouse=True)
def _fresh_backlog_reading(settings):
    # The web process caches the global backlog for a second; tests read it fresh.
    settings.GLOBAL_BACKLOG_CACHE_SECONDS = 0
