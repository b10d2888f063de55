"""The web UI end to end in a real browser: log in, upload invoices (file input and drag and
drop) with progress, watch the jobs reach SUCCEEDED without reloading (over the WebSocket,
or by polling when the socket server is down), and read a job's fields with their evidence
highlighted in the untrusted document text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.support import log_in

pytestmark = pytest.mark.slow

UBL_WITH_ALLOWANCES = (
    Path(__file__).resolve().parents[2] / "testdata/invoices/factur-x-python/fixtures/xml/ubl-21-en16931.xml"
)

# Passes the built-in extractor and every validation check (valid VAT id and IBAN, consistent
# totals). The note line is hostile markup and astral characters: it must show as text, and
# evidence offsets after it (code points) must still land on the right characters.
INVOICE = (
    "ACME Supplies GmbH\nVAT ID: DE136695976\nIBAN: DE89 3704 0044 0532 0130 00\n"
    "Invoice number: {number}\nInvoice date: 2026-11-02\nDue date: 2026-12-02\nCurrency: EUR\n"
    'Note: <img src=x onerror="window.__pwned=1"> Café 😀 order\n'
    "Widget 2 x 50.00 = 100.00\nNet total: 100.00 EUR\nVAT 19%: 19.00 EUR\nTotal: 119.00 EUR\n"
)


def drop_file(page, name: str, text: str) -> None:
    """A real drop event on the drop zone, carrying a File in its DataTransfer."""
    page.evaluate(
        """([name, text]) => {
            const transfer = new DataTransfer();
            transfer.items.add(new File([text], name, { type: "text/plain" }));
            const zone = document.getElementById("dropzone");
            zone.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
            zone.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        }""",
        [name, text],
    )


def wait_for_row_state(page, system, job_id: str, state: str) -> None:
    """The list row of ``job_id`` shows ``state``; on timeout, say what the database and the
    processes knew."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    from extraction.models import JobEvent

    try:
        page.wait_for_selector(f"#job-rows tr[data-job-id='{job_id}'][data-state={state}]", timeout=90_000)
    except PlaywrightTimeout as timed_out:
        events = list(
            JobEvent.objects.filter(job_id=job_id).order_by("id").values_list("id", "state_version", "to_state")
        )
        row = page.locator(f"#job-rows tr[data-job-id='{job_id}']")
        shown = row.evaluate("r => r.outerHTML") if row.count() else "no row"
        raise AssertionError(
            f"job {job_id} not shown as {state}: events {events}; row {shown}; "
            f"mode {page.get_attribute('#live-mode', 'data-mode')}\n{system.processes.logs()}"
        ) from timed_out


def uploaded_job_id(page, file_name: str) -> str:
    row = page.locator(f"#upload-rows tr[data-file-name='{file_name}'][data-job-id]")
    row.wait_for()
    return row.get_attribute("data-job-id")


def test_uploaded_invoices_finish_live_and_show_highlighted_evidence(
    system, live_server, member, browser_page, tmp_path
):
    system.daphne()
    page = browser_page
    log_in(page, live_server.url, member)
    page.wait_for_selector("#live-mode[data-mode=live]")
    page.evaluate("window.__sameDocument = true")  # gone if anything reloads the page

    invoice = tmp_path / "acme-inv-1.txt"
    invoice.write_text(INVOICE.format(number="INV-2026-001"), encoding="utf-8")
    page.set_input_files("#file-input", str(invoice))
    drop_file(page, "acme-inv-2.txt", INVOICE.format(number="INV-2026-002"))
    first, second = uploaded_job_id(page, "acme-inv-1.txt"), uploaded_job_id(page, "acme-inv-2.txt")
    assert first != second
    assert page.locator("#upload-rows progress").evaluate_all("bars => bars.map(b => b.value)") == [1, 1]

    for job_id in (first, second):
        wait_for_row_state(page, system, job_id, "SUCCEEDED")
    assert page.evaluate("window.__sameDocument") is True
    assert page.get_attribute("#live-mode", "data-mode") == "live"
    assert "INV-2026-001" in page.locator(f"#job-rows tr[data-job-id='{first}']").inner_text()

    page.click(f"#job-rows tr[data-job-id='{first}'] a")
    page.wait_for_url(f"**/jobs/{first}/")
    page.wait_for_selector("#job[data-state=SUCCEEDED]")
    gross = page.locator("mark.evidence[data-field='totals.gross']")
    gross.wait_for()
    assert gross.inner_text() == "119.00"
    assert page.locator("mark.evidence[data-field='invoice_number']").inner_text() == "INV-2026-001"
    assert page.locator("#field-rows tr[data-field='totals.gross'] td").nth(1).inner_text() == "119.00"
    status = page.locator("#field-rows tr[data-field='totals.gross'] td.trust")
    assert (status.inner_text(), status.get_attribute("title")) == ("verified", "read by rules")
    assert page.locator("#no-reasons").is_visible()
    # The document's markup is shown as text, never interpreted.
    assert '<img src=x onerror="window.__pwned=1">' in page.locator("pre.page").inner_text()
    assert page.locator("pre.page img").count() == 0
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#review-link").is_hidden()  # only for jobs waiting for review


def test_an_uploaded_e_invoice_shows_its_allowances_charges_and_vat_breakdown(
    system, live_server, member, browser_page
):
    system.daphne()
    page = browser_page
    log_in(page, live_server.url, member)
    page.set_input_files("#file-input", str(UBL_WITH_ALLOWANCES))
    job_id = uploaded_job_id(page, UBL_WITH_ALLOWANCES.name)
    wait_for_row_state(page, system, job_id, "SUCCEEDED")

    page.goto(f"{live_server.url}/jobs/{job_id}/")
    page.wait_for_selector("#job[data-state=SUCCEEDED]")
    rows = page.locator("#field-rows tr[data-field]")
    rows.first.wait_for()
    shown = {
        path: page.locator(f"#field-rows tr[data-field='{path}'] td").nth(1).inner_text()
        for path in (
            "allowances[0].reason",
            "allowances[1].amount",
            "charges[0].amount",
            "tax_breakdown[1].rate",
            "totals.charge_total",
        )
    }
    assert shown == {
        "allowances[0].reason": "Consigne",
        "allowances[1].amount": "2.50",
        "charges[0].amount": "5.50",
        "tax_breakdown[1].rate": "5.50",
        "totals.charge_total": "5.50",
    }
    assert page.locator("mark.evidence[data-field='charges[0].reason']").inner_text() == "Surtaxe carburant"


def test_without_the_socket_server_the_list_still_updates_by_polling(
    system, live_server, member, browser_page, tmp_path
):
    page = browser_page  # no daphne: the ticket names a socket nobody answers
    log_in(page, live_server.url, member)
    page.wait_for_selector("#live-mode[data-mode=polling]")
    page.evaluate("window.__sameDocument = true")
    invoice = tmp_path / "acme-poll.txt"
    invoice.write_text(INVOICE.format(number="INV-2026-003"), encoding="utf-8")
    page.set_input_files("#file-input", str(invoice))
    job_id = uploaded_job_id(page, "acme-poll.txt")
    wait_for_row_state(page, system, job_id, "SUCCEEDED")
    assert page.evaluate("window.__sameDocument") is True


def test_the_client_never_moves_a_job_back_to_an_older_state_version(live_server, member, browser_page):
    page = browser_page
    log_in(page, live_server.url, member)
    kept = page.evaluate("""() => {
        const versions = new window.ExtractionUI.JobVersions();
        return [versions.accept("job", 4), versions.accept("job", 2), versions.isNewer("job", 3),
                versions.accept("job", 5), versions.known("job")];
    }""")
    assert kept == [True, False, False, True, 5]
