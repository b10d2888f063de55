"""One supplier rule (Supplier.clean) for the admin form and the CSV import: the same input is
refused with the same message, or stored in the same normal form, whichever way it comes in."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership, Role, Tenant, create_tenant
from extraction.models import Supplier
from extraction.validation.suppliers import SupplierImportError, import_suppliers, parse_supplier_csv

ADD_URL = "/admin/extraction/supplier/add/"
SHAPE_MESSAGE = "vat_id '12345' is not a country prefix and 2-13 letters/digits"
BAD_IBAN = "DE12123456781234567890"  # DE02120300000000202051 with its check digits broken
CHECKSUM_MESSAGE = f"iban '{BAD_IBAN}' is not a valid IBAN (The number's checksum or check digit is invalid.)"


@pytest.fixture
def buyer(db) -> Tenant:
    return create_tenant(slug="acme-buyer")


@pytest.fixture(params=["superuser", "operator"])
def admin_user(request, buyer) -> tuple[Client, dict[str, str]]:
    """A logged-in admin client and the form fields its add form needs besides the supplier's."""
    superuser = request.param == "superuser"
    user = get_user_model().objects.create_user(
        username=f"u-{uuid.uuid4().hex[:8]}", password="pw", is_staff=True, is_superuser=superuser
    )
    if not superuser:
        Membership.objects.create(user=user, tenant=buyer, role=Role.OPERATOR)
    client = Client()
    client.force_login(user)
    return client, {"tenant": str(buyer.pk)} if superuser else {}


def add_in_admin(admin_user, **supplier: str):
    client, extra = admin_user
    return client.post(ADD_URL, {"name": "Lieferant GmbH", "iban": "", **supplier, **extra})


def import_rows(tenant: Tenant, *rows: str) -> list[str]:
    """The import's problems for a file of these rows (empty when it imported them)."""
    try:
        parsed = parse_supplier_csv("name,vat_id,iban\n" + "".join(f"{row}\n" for row in rows))
    except SupplierImportError as error:
        return error.problems
    import_suppliers(tenant=tenant, rows=parsed)
    return []


def test_admin_refuses_a_vat_id_without_a_country_prefix(admin_user):
    response = add_in_admin(admin_user, vat_id="12345")

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {"vat_id": [SHAPE_MESSAGE]}
    assert not Supplier.objects.exists()


def test_import_refuses_a_vat_id_without_a_country_prefix_with_the_admins_message(buyer):
    assert import_rows(buyer, "Lieferant GmbH,12345,") == [f"line 2: {SHAPE_MESSAGE}"]
    assert not Supplier.objects.exists()


def test_admin_stores_a_spaced_lower_case_vat_id_normalized(admin_user, buyer):
    response = add_in_admin(admin_user, vat_id=" de 136 695 976 ")

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert list(Supplier.objects.values_list("tenant_id", "vat_id")) == [(buyer.pk, "DE136695976")]


def test_import_stores_a_spaced_lower_case_vat_id_normalized(buyer):
    assert import_rows(buyer, 'Lieferant GmbH," de 136 695 976 ",') == []
    assert list(Supplier.objects.values_list("tenant_id", "vat_id")) == [(buyer.pk, "DE136695976")]


def test_admin_refuses_an_iban_with_a_bad_checksum(admin_user):
    response = add_in_admin(admin_user, vat_id="DE136695976", iban=BAD_IBAN)

    assert response.context["adminform"].form.errors == {"iban": [CHECKSUM_MESSAGE]}
    assert not Supplier.objects.exists()


def test_import_refuses_an_iban_with_a_bad_checksum_with_the_admins_message(buyer):
    assert import_rows(buyer, f"Lieferant GmbH,DE136695976,{BAD_IBAN}") == [f"line 2: {CHECKSUM_MESSAGE}"]
    assert not Supplier.objects.exists()


def test_admin_reports_every_problem_once_on_its_field(admin_user):
    response = add_in_admin(admin_user, name="   ", vat_id="", iban=BAD_IBAN)

    assert response.context["adminform"].form.errors == {
        "name": ["name is empty"],
        "vat_id": ["vat_id is empty"],
        "iban": [CHECKSUM_MESSAGE],
    }
    assert not Supplier.objects.exists()


def test_admin_accepts_a_full_length_iban_typed_in_groups(admin_user):
    spaced = "MT84 MALT 0110 0001 2345 MTLC AST0 01S"  # 38 characters typed, 31 stored

    response = add_in_admin(admin_user, vat_id="MT12345678", iban=spaced)

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Supplier.objects.get().iban == "MT84MALT011000012345MTLCAST001S"


def test_admin_refuses_a_vat_id_that_normalizes_to_an_existing_one(admin_user, buyer):
    Supplier.objects.create(tenant=buyer, name="Lieferant GmbH", vat_id="DE136695976")

    response = add_in_admin(admin_user, name="Other GmbH", vat_id="de 136.695.976")

    picks_the_tenant = "tenant" in admin_user[1]  # a superuser: the model's constraint answers
    assert response.context["adminform"].form.errors == (
        {"__all__": ["Supplier with this Tenant and Vat id already exists."]}
        if picks_the_tenant
        else {"vat_id": ["This tenant already has a supplier with this VAT id."]}
    )
    assert Supplier.objects.count() == 1
