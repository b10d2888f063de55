"""Supplier master data: the CSV import command (normalized upsert, all or nothing, bad rows by
line number) and the admin pages (tenant-scoped, normalized, CSV export in the import format)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import Membership, Role, Tenant, create_tenant
from extraction.models import Supplier


@pytest.fixture
def buyer(db) -> Tenant:
    return create_tenant(slug="acme-buyer")


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"{uuid.uuid4().hex}.csv"
    path.write_text(text, encoding="utf-8")
    return path


def run_import(slug: str, path: Path, capsys) -> tuple[str, str]:
    call_command("import_suppliers", slug, str(path))
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_import_creates_suppliers_with_normalized_ids(buyer, tmp_path, capsys):
    path = write(
        tmp_path,
        "name,vat_id,iban\n"
        "  Lieferant   GmbH ,de 136 695 976, de02 1203 0000 0000 2020 51\n"
        "Coolblue B.V.,NL810433941B01,\n",
    )

    out, _ = run_import("acme-buyer", path, capsys)

    assert "2 created, 0 updated, 0 unchanged" in out
    rows = {s.vat_id: s for s in Supplier.objects.filter(tenant=buyer)}
    assert rows["DE136695976"].name == "Lieferant GmbH"
    assert rows["DE136695976"].iban == "DE02120300000000202051"
    assert rows["NL810433941B01"].iban == ""


def test_reimport_updates_by_vat_id_and_counts_unchanged_rows(buyer, tmp_path, capsys):
    run_import(
        "acme-buyer", write(tmp_path, "name,vat_id,iban\nOld Name GmbH,DE136695976,\nSame AG,DE811193231,\n"), capsys
    )

    out, _ = run_import(
        "acme-buyer",
        write(
            tmp_path,
            "iban,vat_id,name,notes\nDE02120300000000202051,DE 136695976,New Name GmbH,moved\n,DE811193231,Same AG,\n",
        ),
        capsys,
    )

    assert "0 created, 1 updated, 1 unchanged" in out
    supplier = Supplier.objects.get(tenant=buyer, vat_id="DE136695976")
    assert (supplier.name, supplier.iban) == ("New Name GmbH", "DE02120300000000202051")
    assert Supplier.objects.filter(tenant=buyer).count() == 2


def test_bad_rows_are_reported_by_line_number_and_nothing_is_imported(buyer, tmp_path, capsys):
    Supplier.objects.create(tenant=buyer, name="Kept GmbH", vat_id="DE136695976")
    path = write(
        tmp_path,
        "name,vat_id,iban\n"
        "Good GmbH,DE811193231,\n"  # line 2
        ",DE129273398,\n"  # line 3: no name
        "Bad Bank GmbH,DE118716269,DE12123456781234567890\n"  # line 4: mod-97 fails
        "Twice GmbH,de811193231,\n"  # line 5: repeats line 2
        "No Id GmbH,,\n"  # line 6
        "Changed Kept GmbH,DE136695976,\n",
    )  # line 7: fine, but not applied

    with pytest.raises(CommandError, match="4 bad row"):
        call_command("import_suppliers", "acme-buyer", str(path))

    err = capsys.readouterr().err
    assert "line 3: name is empty" in err
    assert "line 4: iban 'DE12123456781234567890' is not a valid IBAN" in err
    assert "line 5: vat_id DE811193231 repeats line 2" in err
    assert "line 6: vat_id is empty" in err
    assert "line 2" not in err.replace("repeats line 2", "")
    assert list(Supplier.objects.filter(tenant=buyer).values_list("name", flat=True)) == ["Kept GmbH"]


def test_file_without_the_required_columns_is_refused(buyer, tmp_path, capsys):
    with pytest.raises(CommandError):
        call_command("import_suppliers", "acme-buyer", str(write(tmp_path, "name,vat\nA GmbH,DE136695976\n")))

    assert "missing column(s) vat_id, iban" in capsys.readouterr().err
    assert not Supplier.objects.exists()


def test_unknown_tenant_is_refused(db, tmp_path):
    with pytest.raises(CommandError, match="no tenant with slug 'nobody'"):
        call_command("import_suppliers", "nobody", str(write(tmp_path, "name,vat_id,iban\n")))


def test_same_vat_id_in_two_tenants_are_two_suppliers(buyer, tmp_path, capsys):
    other = create_tenant(slug="other-buyer")
    path = write(tmp_path, "name,vat_id,iban\nLieferant GmbH,DE136695976,\n")

    run_import("acme-buyer", path, capsys)
    run_import("other-buyer", path, capsys)

    assert Supplier.objects.filter(vat_id="DE136695976").count() == 2
    assert Supplier.objects.filter(tenant=other).count() == 1


# --- admin pages -----------------------------------------------------------------------------------


def staff_client(tenant: Tenant | None, role: str, *, superuser: bool = False) -> Client:
    user = get_user_model().objects.create_user(
        username=f"u-{uuid.uuid4().hex[:8]}", password="pw", is_staff=True, is_superuser=superuser
    )
    if tenant is not None:
        Membership.objects.create(user=user, tenant=tenant, role=role)
    client = Client()
    client.force_login(user)
    return client


def test_operator_adds_a_supplier_to_own_tenant_normalized(buyer):
    client = staff_client(buyer, Role.OPERATOR)

    response = client.post(
        "/admin/extraction/supplier/add/",
        {"name": " Lieferant  GmbH ", "vat_id": "de 136 695 976", "iban": "de02 1203 0000 0000 2020 51"},
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    supplier = Supplier.objects.get()
    assert (supplier.tenant_id, supplier.name, supplier.vat_id, supplier.iban) == (
        buyer.pk,
        "Lieferant GmbH",
        "DE136695976",
        "DE02120300000000202051",
    )


def test_admin_refuses_a_duplicate_vat_id_and_a_bad_iban(buyer):
    Supplier.objects.create(tenant=buyer, name="Lieferant GmbH", vat_id="DE136695976")
    client = staff_client(buyer, Role.OPERATOR)

    duplicate = client.post("/admin/extraction/supplier/add/", {"name": "X", "vat_id": "DE136695976", "iban": ""})
    bad_iban = client.post(
        "/admin/extraction/supplier/add/", {"name": "Y", "vat_id": "DE811193231", "iban": "DE12123456781234567890"}
    )

    assert duplicate.context["adminform"].form.errors["vat_id"] == [
        "This tenant already has a supplier with this VAT id."
    ]
    assert bad_iban.context["adminform"].form.errors["iban"] == [
        "iban 'DE12123456781234567890' is not a valid IBAN (The number's checksum or check digit is invalid.)"
    ]
    assert Supplier.objects.count() == 1


def test_supplier_pages_are_tenant_scoped_and_reviewers_only_read(buyer):
    other = create_tenant(slug="other-buyer")
    mine = Supplier.objects.create(tenant=buyer, name="Mine GmbH", vat_id="DE136695976")
    theirs = Supplier.objects.create(tenant=other, name="Theirs GmbH", vat_id="DE811193231")
    reviewer = staff_client(buyer, Role.REVIEWER)

    listing = reviewer.get("/admin/extraction/supplier/").content.decode()

    assert "Mine GmbH" in listing and "Theirs GmbH" not in listing
    # Another tenant's supplier is answered like a missing one: back to the admin index.
    other = reviewer.get(f"/admin/extraction/supplier/{theirs.pk}/change/")
    assert (other.status_code, other["Location"]) == (302, "/admin/")
    assert reviewer.get("/admin/extraction/supplier/add/").status_code == 403
    assert (
        reviewer.post(
            f"/admin/extraction/supplier/{mine.pk}/change/", {"name": "Renamed", "vat_id": "DE136695976", "iban": ""}
        ).status_code
        == 403
    )
    mine.refresh_from_db()
    assert mine.name == "Mine GmbH"


def test_csv_export_writes_the_import_format(buyer):
    Supplier.objects.create(tenant=buyer, name="=HYPERLINK(evil)", vat_id="DE136695976", iban="DE02120300000000202051")
    client = staff_client(buyer, Role.OPERATOR)

    response = client.post(
        "/admin/extraction/supplier/",
        {"action": "export_csv", "_selected_action": list(Supplier.objects.values_list("pk", flat=True))},
    )

    assert response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert lines == ["name,vat_id,iban", "'=HYPERLINK(evil),DE136695976,DE02120300000000202051"]
