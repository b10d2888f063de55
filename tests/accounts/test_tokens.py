"""API tokens: Bearer authentication, hashed storage, last use, and the commands that issue
and revoke them. Session login is the browser's way in and must land in the same tenant."""

from __future__ import annotations

import hashlib
import time
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken, Membership, Role, Tenant, create_tenant

JOBS_URL = "/api/v1/extraction-jobs"
PROBLEM = "application/problem+json"


def client_with(header: str | None) -> APIClient:
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    return client


def run_command(*args: str) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().splitlines()


def assert_unauthorized(response, problem_type: str) -> None:
    assert response.status_code == 401, response.content
    assert response["Content-Type"] == PROBLEM
    assert response.json()["type"] == problem_type
    # RFC 9110: a 401 tells the client which scheme to use.
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_request_without_credentials_is_401(db):
    assert_unauthorized(client_with(None).get(JOBS_URL), "/problems/not-authenticated")


def test_unknown_token_is_401(tenant_a):
    assert_unauthorized(
        client_with("Bearer dx_00000000_not-a-real-token").get(JOBS_URL), "/problems/authentication-failed"
    )


@pytest.mark.parametrize("header", ["Bearer", "Bearer    ", "Bearer two words"])
def test_malformed_bearer_header_is_401(tenant_a, header):
    assert_unauthorized(client_with(header).get(JOBS_URL), "/problems/authentication-failed")


def test_token_of_a_tenant_is_accepted(tenant_a):
    response = tenant_a.client.get(JOBS_URL)
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


def test_revoked_token_is_401(tenant_a):
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    assert token.revoke() is True
    assert_unauthorized(tenant_a.client.get(JOBS_URL), "/problems/authentication-failed")


def test_revoke_is_true_only_for_the_call_that_revoked(tenant_a):
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    assert token.revoke() is True
    assert token.revoke() is False


def test_token_is_stored_only_as_its_hash(tenant_a):
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    assert token.token_hash == hashlib.sha256(tenant_a.token.encode()).hexdigest()
    secret = tenant_a.token.split("_", 2)[2]  # dx_<prefix>_<secret>; the secret may hold "_" itself
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(t)::text FROM accounts_apitoken t")
        stored = " ".join(row[0] for row in cursor.fetchall())
    assert tenant_a.token not in stored
    assert secret not in stored


def test_token_shows_its_prefix(tenant_a):
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    assert len(token.prefix) == 8
    assert tenant_a.token.startswith(f"dx_{token.prefix}_")


def test_first_use_records_last_used_at(tenant_a):
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    assert token.last_used_at is None
    before = timezone.now()
    assert tenant_a.client.get(JOBS_URL).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None and token.last_used_at >= before


def test_last_used_at_is_written_at_most_once_per_resolution(tenant_a, settings):
    settings.API_TOKEN_LAST_USED_RESOLUTION_SECONDS = 60
    token = ApiToken.objects.get(tenant=tenant_a.tenant)
    recent = timezone.now() - timedelta(seconds=10)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=recent)
    assert tenant_a.client.get(JOBS_URL).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at == recent

    stale = timezone.now() - timedelta(seconds=120)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=stale)
    assert tenant_a.client.get(JOBS_URL).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at > stale + timedelta(seconds=60)


def test_create_tenant_prints_a_working_token_alone_on_the_last_line(db):
    lines = run_command("create_tenant", "acme", "--name", "Acme Ltd")
    raw = lines[-1]
    assert raw.startswith("dx_") and " " not in raw
    tenant = Tenant.objects.get(slug="acme")
    assert tenant.name == "Acme Ltd"
    assert tenant.usage.pending_jobs == 0  # admission needs its usage row from the start
    assert client_with(f"Bearer {raw}").get(JOBS_URL).status_code == 200
    assert not any(raw in line for line in lines[:-1])


def test_create_tenant_twice_is_an_error(db):
    run_command("create_tenant", "acme")
    with pytest.raises(CommandError, match="already exists"):
        run_command("create_tenant", "acme")
    assert ApiToken.objects.filter(tenant__slug="acme").count() == 1


def test_create_api_token_prints_a_working_token_with_its_role(db):
    run_command("create_tenant", "acme")
    raw = run_command("create_api_token", "acme", "--role", "member", "--name", "ci")[-1]
    token = ApiToken.objects.get(token_hash=hashlib.sha256(raw.encode()).hexdigest())
    assert (token.tenant.slug, token.role, token.name) == ("acme", Role.MEMBER, "ci")
    assert client_with(f"Bearer {raw}").get(JOBS_URL).status_code == 200


def test_create_api_token_for_unknown_tenant_is_an_error(db):
    with pytest.raises(CommandError, match="No tenant"):
        run_command("create_api_token", "nobody")
    assert ApiToken.objects.count() == 0


def test_revoke_api_token_by_prefix_stops_it_authenticating(db):
    first = run_command("create_tenant", "acme")[-1]
    second = run_command("create_api_token", "acme")[-1]
    prefix = first.split("_")[1]
    lines = run_command("revoke_api_token", prefix)
    assert prefix in lines[-1]
    assert_unauthorized(client_with(f"Bearer {first}").get(JOBS_URL), "/problems/authentication-failed")
    # Only the named token is revoked.
    assert client_with(f"Bearer {second}").get(JOBS_URL).status_code == 200


def test_revoke_api_token_twice_or_unknown_is_an_error(db):
    prefix = run_command("create_tenant", "acme")[-1].split("_")[1]
    run_command("revoke_api_token", prefix)
    with pytest.raises(CommandError, match="already revoked"):
        run_command("revoke_api_token", prefix)
    with pytest.raises(CommandError, match="No token"):
        run_command("revoke_api_token", "ffffffff")


def _user_in(tenant: Tenant, role: str, username: str = "alice"):
    user = get_user_model().objects.create_user(username=username, password="correct-horse-battery")
    Membership.objects.create(user=user, tenant=tenant, role=role)
    return user


def test_session_login_acts_for_the_members_tenant(db):
    tenant = create_tenant(slug="acme")
    _user_in(tenant, Role.MEMBER)
    client = APIClient()
    assert client.login(username="alice", password="correct-horse-battery")
    response = client.get(JOBS_URL)
    assert response.status_code == 200, response.content
    assert response.json()["results"] == []


def test_session_user_without_membership_is_refused(db):
    get_user_model().objects.create_user(username="bob", password="correct-horse-battery")
    client = APIClient()
    assert client.login(username="bob", password="correct-horse-battery")
    response = client.get(JOBS_URL)
    assert response.status_code == 403
    assert response["Content-Type"] == PROBLEM


def test_session_user_with_revoked_membership_is_refused(db):
    tenant = create_tenant(slug="acme")
    user = _user_in(tenant, Role.ADMIN)
    Membership.objects.filter(user=user).update(revoked_at=timezone.now())
    client = APIClient()
    client.force_login(user)
    assert client.get(JOBS_URL).status_code == 403


def test_token_cache_bounds_how_long_a_revoked_token_still_works(tenant_a, settings, django_assert_max_num_queries):
    from accounts.authentication import _lookup, _recent

    settings.API_TOKEN_CACHE_SECONDS = 60
    _recent.clear()
    seen_from = time.monotonic()
    assert tenant_a.client.get("/api/v1/extraction-jobs").status_code == 200  # cached for 60 s from here
    seen_by = time.monotonic()
    ApiToken.objects.filter(tenant=tenant_a.tenant).update(revoked_at=timezone.now())
    with django_assert_max_num_queries(2):  # the list query and its count; no token lookup
        assert tenant_a.client.get("/api/v1/extraction-jobs").status_code == 200  # inside the window
    # The cache's clock, passed in: the revoked token works until 60 s after it was seen, not later.
    assert _lookup(tenant_a.token, now=seen_from + 59.9) is not None
    assert _lookup(tenant_a.token, now=seen_by + 60) is None
    _recent.clear()
