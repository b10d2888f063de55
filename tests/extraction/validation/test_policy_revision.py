"""The tenant's validation policy revision (accounts_tenant.policy_revision) on real PostgreSQL:
raised by the database in the transaction that changes the policy or the suppliers, kept against
anything else that writes it, and the worker's copy of a revision used again without a read."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import connection, transaction

from accounts.models import Tenant
from config import db
from extraction.intake.text import DocumentText
from extraction.models import Supplier
from extraction.providers.builtin import extract_invoice
from extraction.validation import policy_cache
from extraction.validation.policy import validate_extraction
from extraction.validation.schema import parse_invoice_v1
from tests.factories import SAMPLE_TEXT, make_tenant

pytestmark = pytest.mark.django_db


def _revision(tenant: Tenant) -> int:
    return Tenant.objects.values_list("policy_revision", flat=True).get(pk=tenant.pk)


def _supplier(tenant: Tenant, vat_id: str, **fields: str) -> Supplier:
    return Supplier(
        tenant=tenant, name=fields.get("name", f"Supplier {vat_id}"), vat_id=vat_id, iban=fields.get("iban", "")
    )


def test_a_new_tenant_starts_at_revision_one():
    assert _revision(make_tenant()) == 1


def test_changing_the_allowed_currencies_or_the_overrides_raises_it_by_one_per_change():
    tenant = make_tenant()
    tenant.allowed_currencies = ["EUR"]
    tenant.save()
    assert _revision(tenant) == 2
    Tenant.objects.filter(pk=tenant.pk).update(validation_overrides={"iban_checksum": "warning"})
    assert _revision(tenant) == 3


def test_other_changes_of_the_tenant_keep_it():
    tenant = make_tenant()
    Tenant.objects.filter(pk=tenant.pk).update(name="Renamed", max_in_flight=3)
    tenant.refresh_from_db()
    tenant.save()  # every column written again, the policy's as they were
    assert _revision(tenant) == 1


def test_a_save_that_sends_an_older_revision_cannot_lower_it():
    tenant = make_tenant()
    stale = Tenant.objects.get(pk=tenant.pk)  # loaded at revision 1
    Tenant.objects.filter(pk=tenant.pk).update(allowed_currencies=["EUR", "USD"])
    assert _revision(tenant) == 2
    stale.name = "Edited in an old form"
    stale.save()  # sends policy_revision = 1 and the old currencies: a change, so one more
    assert _revision(tenant) == 3
    Tenant.objects.filter(pk=tenant.pk).update(policy_revision=0)
    assert _revision(tenant) == 3


def test_every_statement_that_changes_suppliers_raises_their_tenants_revision_once():
    tenant, other = make_tenant(), make_tenant()
    Supplier.objects.bulk_create([_supplier(tenant, f"DE{n:09d}") for n in range(3)] + [_supplier(other, "FR1")])
    assert (_revision(tenant), _revision(other)) == (2, 2)
    Supplier.objects.filter(tenant=tenant).update(iban="DE89370400440532013000")
    assert (_revision(tenant), _revision(other)) == (3, 2)
    Supplier.objects.filter(tenant=tenant, vat_id="DE000000000").delete()
    assert (_revision(tenant), _revision(other)) == (4, 2)
    Supplier.objects.filter(tenant=tenant, vat_id="nobody").update(name="x")  # no row: still a statement
    assert _revision(tenant) == 4


def test_a_rolled_back_change_leaves_it():
    tenant = make_tenant()
    with pytest.raises(RuntimeError), transaction.atomic():
        Supplier.objects.create(tenant=tenant, name="Gone", vat_id="DE1")
        raise RuntimeError
    assert _revision(tenant) == 1


def _invoice_and_document():
    document = DocumentText(pages=(SAMPLE_TEXT,))
    return parse_invoice_v1(json.dumps(extract_invoice(document))), document


@pytest.fixture
def statements(monkeypatch) -> list[str]:
    """The statements run through ``config.db.prepared_cursor``, as they run."""
    seen: list[str] = []
    execute = db.DjangoErrorsCursor.execute

    def counted(self, query, params=None, **kwargs):
        seen.append(str(query))
        return execute(self, query, params, **kwargs)

    monkeypatch.setattr(db.DjangoErrorsCursor, "execute", counted)
    policy_cache.policies.clear()
    return seen


def test_the_policy_read_under_a_revision_is_used_again_without_a_read(statements):
    tenant = make_tenant()
    invoice, document = _invoice_and_document()
    first = validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=1)
    again = validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=1)

    assert len(statements) == 1
    assert first == again
    assert again.tenant_policy_revision == 1
    assert again.as_dict()["tenant_policy_revision"] == 1


def test_another_revision_or_none_reads_the_policy_as_it_is_now(statements):
    tenant = make_tenant()
    invoice, document = _invoice_and_document()
    validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=1)
    Supplier.objects.create(
        tenant=tenant, name="ACME Supplies GmbH", vat_id="DE136695976", iban="DE02120300000000202051"
    )

    newer = validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=2)
    uncached = validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk)

    assert len(statements) == 3
    assert (newer.tenant_policy_revision, uncached.tenant_policy_revision) == (2, 2)
    supplier_check = next(c for c in newer.checks if c["check"] == "supplier_master_data")
    assert supplier_check["status"] == "failed"


def test_a_revision_the_claim_named_but_a_read_found_newer_is_kept_under_the_newer(statements):
    tenant = make_tenant()
    Tenant.objects.filter(pk=tenant.pk).update(allowed_currencies=["USD"])
    invoice, document = _invoice_and_document()

    judged = validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=1)
    validate_extraction(invoice=invoice, document=document, tenant_id=tenant.pk, policy_revision=2)

    assert judged.tenant_policy_revision == 2  # what it was judged with, not what was asked
    assert "currency_not_allowed" in judged.reasons
    assert len(statements) == 1


def test_the_cache_is_emptied_when_full():
    cache = policy_cache.PolicyCache(max_entries=2)
    tenant = uuid.uuid4()
    cache.put((tenant, 1, "vat_id", "A"), (1,))
    cache.put((tenant, 1, "vat_id", "B"), (1,))
    cache.put((tenant, 1, "vat_id", "C"), (1,))
    assert len(cache) == 1
    assert cache.get((tenant, 1, "vat_id", "C")) == (1,)
    assert cache.get((tenant, 1, "vat_id", "A")) is None


def test_a_tenant_that_does_not_exist_is_an_error_not_a_cached_policy(statements):
    invoice, document = _invoice_and_document()
    with pytest.raises(Tenant.DoesNotExist):
        validate_extraction(invoice=invoice, document=document, tenant_id=uuid.uuid4(), policy_revision=1)
    assert len(policy_cache.policies) == 0
    assert connection.is_usable()
