/*
 * One job's page: its state (live over the socket, polling when it is down), the extracted
 * fields, the validation reasons, and the document text with each field's evidence span
 * highlighted.
 *
 * The document text is the uploader's, hence untrusted: it only ever enters the page as
 * text nodes (textContent / createTextNode), never as HTML. Evidence offsets count Unicode
 * code points (Python string indices), so the text is split with Array.from, not indexed
 * as UTF-16.
 */
(function () {
  "use strict";
  const { LiveJobs, JobVersions, StatusReader, apiJson } = window.ExtractionUI;

  const root = document.getElementById("job");
  const jobId = root.dataset.jobId;
  const versions = new JobVersions();
  const reader = new StatusReader(versions, render);
  let documentText = null;
  let shownResultVersion = -1;
  let partPages = null; // [first, last] of a bundle's part, from its status

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  /* invoice.v1 or invoice.v2 output → [{path, value, evidence}] in document order (the order of
   * InvoiceV1.fields() / InvoiceV2.fields() in extraction/validation/schema.py). */
  const LINE_FIELDS = ["description", "quantity", "unit_price", "net_amount", "tax_rate", "tax_amount"];
  const LINE_FIELDS_V2 = ["tax_category", "price_base_quantity"];
  const ADJUSTMENT_FIELDS = ["amount", "base_amount", "percentage", "reason", "reason_code", "tax_category", "tax_rate"];
  const TAX_FIELDS = ["category", "rate", "taxable_amount", "tax_amount", "exemption_reason", "exemption_reason_code"];
  const TOTALS = ["net", "tax", "gross", "prepaid", "amount_due"];
  const TOTALS_V2 = ["line_total", "allowance_total", "charge_total", "rounding"];
  function fieldRows(output) {
    const rows = [];
    const add = (path, node) => rows.push({ path, value: node ? node.value : null, evidence: node ? node.evidence : null });
    const addAll = (prefix, entries, names) => (entries || []).forEach((entry, index) => {
      for (const name of names) add(prefix + "[" + index + "]." + name, entry[name]);
    });
    if (!output) return rows;
    const v2 = output.schema === "invoice.v2";
    add("document_type", output.document_type);
    for (const name of ["name", "vat_id", "iban"]) add("supplier." + name, (output.supplier || {})[name]);
    if (v2) for (const name of ["name", "vat_id"]) add("buyer." + name, (output.buyer || {})[name]);
    const header = ["invoice_number", "issue_date", "due_date", "currency"];
    for (const name of v2 ? header.concat(["buyer_reference", "order_reference"]) : header) add(name, output[name]);
    (output.lines || []).forEach((line, index) => {
      const prefix = "lines[" + index + "]";
      for (const name of v2 ? LINE_FIELDS.concat(LINE_FIELDS_V2) : LINE_FIELDS) add(prefix + "." + name, line[name]);
      if (v2) {
        addAll(prefix + ".allowances", line.allowances, ADJUSTMENT_FIELDS);
        addAll(prefix + ".charges", line.charges, ADJUSTMENT_FIELDS);
      }
    });
    if (v2) {
      addAll("allowances", output.allowances, ADJUSTMENT_FIELDS);
      addAll("charges", output.charges, ADJUSTMENT_FIELDS);
      addAll("tax_breakdown", output.tax_breakdown, TAX_FIELDS);
    }
    for (const name of v2 ? TOTALS.concat(TOTALS_V2) : TOTALS) add("totals." + name, (output.totals || {})[name]);
    if (v2) add("payment_terms", output.payment_terms);
    return rows;
  }

  /* Fields a person must look at: those neither verified nor derived (validation.fields); for a
     result judged before fields had a status, those a failed check points at. */
  const TRUSTED = new Set(["verified", "derived"]);
  function flaggedFields(validation) {
    const flagged = new Set();
    if (validation && validation.fields) {
      for (const [path, trust] of Object.entries(validation.fields)) if (!TRUSTED.has(trust.status)) flagged.add(path);
      return flagged;
    }
    for (const check of (validation && validation.checks) || []) {
      if (check.status !== "failed") continue;
      if (check.field) flagged.add(check.field);
      const detail = check.detail || {};
      for (const key of ["problems", "lines", "fields"]) {
        for (const problem of detail[key] || []) if (problem && problem.field) flagged.add(problem.field);
      }
      for (const path of detail.missing || []) if (typeof path === "string") flagged.add(path);
    }
    return flagged;
  }

  function markId(path) { return "evidence-" + path.replace(/[^A-Za-z0-9_-]/g, "_"); }

  /* One page as DOM: text nodes, with <mark> around evidence spans that really quote it. */
  function renderPage(text, number, rows, flagged) {
    const chars = Array.from(text);
    const marks = [];
    for (const row of rows) {
      const ev = row.evidence;
      if (!ev || ev.page !== number) continue;
      if (!(Number.isInteger(ev.start) && Number.isInteger(ev.end) && ev.start >= 0 && ev.start < ev.end && ev.end <= chars.length)) continue;
      if (chars.slice(ev.start, ev.end).join("") !== ev.quote) continue; // unresolved: reported, not drawn
      marks.push({ start: ev.start, end: ev.end, path: row.path });
    }
    marks.sort((a, b) => a.start - b.start || b.end - a.end);
    const pre = el("pre", null, "page");
    pre.dataset.page = String(number);
    let position = 0;
    for (const mark of marks) {
      if (mark.start < position) continue; // overlapping: the first one wins
      pre.appendChild(document.createTextNode(chars.slice(position, mark.start).join("")));
      const node = el("mark", chars.slice(mark.start, mark.end).join(""), flagged.has(mark.path) ? "evidence flagged" : "evidence");
      node.dataset.field = mark.path;
      node.title = mark.path;
      node.id = markId(mark.path);
      pre.appendChild(node);
      position = mark.end;
    }
    pre.appendChild(document.createTextNode(chars.slice(position).join("")));
    return pre;
  }

  function renderDocument(result) {
    const container = document.getElementById("document-text");
    if (!documentText) {
      container.replaceChildren(el("p", "The document text is not available yet.", "muted"));
      return;
    }
    const rows = fieldRows(result && result.output);
    const flagged = flaggedFields(result && result.validation);
    container.replaceChildren();
    documentText.pages.forEach((text, index) => {
      // A bundle's part: its own pages only (the others are other invoices').
      if (partPages && (index + 1 < partPages[0] || index + 1 > partPages[1])) return;
      const printed = documentText.einvoice_page === index + 1 ? " — the document's e-invoice XML, printed" : "";
      container.appendChild(el("h3", "Page " + (index + 1) + printed));
      container.appendChild(renderPage(text, index + 1, rows, flagged));
    });
  }

  function renderFields(result) {
    const body = document.getElementById("field-rows");
    body.replaceChildren();
    const flagged = flaggedFields(result.validation);
    const trusts = (result.validation && result.validation.fields) || {};
    for (const row of fieldRows(result.output)) {
      const tr = el("tr", null, flagged.has(row.path) ? "flagged" : "");
      tr.dataset.field = row.path;
      tr.appendChild(el("td", row.path, "path"));
      tr.appendChild(el("td", row.value === null ? "—" : row.value));
      tr.appendChild(trustCell(trusts[row.path]));
      const evidence = el("td");
      if (row.evidence) {
        const link = el("a", "p." + row.evidence.page + " “" + row.evidence.quote + "”");
        link.href = "#" + markId(row.path);
        evidence.appendChild(link);
      }
      tr.appendChild(evidence);
      body.appendChild(tr);
    }
    document.getElementById("fields").hidden = false;
  }

  /* A field's status, with who read it and which checks failed it on hover. */
  function trustCell(trust) {
    if (!trust) return el("td", "—", "trust muted");
    const cell = el("td", trust.status, "trust " + trust.status);
    const why = ["read by " + (trust.sources.join(" + ") || "—")];
    if (trust.failed.length) why.push("failed " + trust.failed.join(", "));
    if (trust.relocated) why.push("evidence moved to where it is printed");
    if (trust.element) why.push(trust.element);
    cell.title = why.join("; ");
    cell.dataset.blocking = String(trust.blocking);
    return cell;
  }

  function renderValidation(validation) {
    const reasons = document.getElementById("reasons");
    reasons.replaceChildren();
    for (const reason of (validation && validation.reasons) || []) reasons.appendChild(el("li", reason));
    const failed = document.getElementById("failed-checks");
    failed.replaceChildren();
    for (const check of (validation && validation.checks) || []) {
      if (check.status !== "failed") continue;
      const item = el("li", check.check + " (" + check.severity + "): " + (check.reason || "") + (check.field ? " — " + check.field : ""));
      item.className = check.severity;
      failed.appendChild(item);
    }
    document.getElementById("validation").hidden = !validation;
    document.getElementById("no-reasons").hidden = reasons.children.length > 0;
  }

  /* A split job's parts, each a link to its job; a part's link to the job it was split from. */
  function renderBundle(job) {
    const rows = document.getElementById("part-rows");
    rows.replaceChildren();
    for (const part of job.parts || []) {
      const tr = el("tr");
      tr.appendChild(el("td", part.pages[0] === part.pages[1] ? String(part.pages[0]) : part.pages.join("–")));
      const cell = el("td");
      const link = el("a", part.job_id.slice(0, 8));
      link.href = "/jobs/" + encodeURIComponent(part.job_id) + "/";
      cell.appendChild(link);
      tr.appendChild(cell);
      tr.appendChild(el("td", part.state, "state state-" + part.state.toLowerCase()));
      rows.appendChild(tr);
    }
    document.getElementById("parts").hidden = !job.parts;
    const parent = document.getElementById("parent-link");
    parent.hidden = !job.parent;
    if (job.parent) {
      partPages = job.parent.pages;
      document.getElementById("parent-pages").textContent = job.parent.pages.join("–");
      document.getElementById("parent-job").href = "/jobs/" + encodeURIComponent(job.parent.job_id) + "/";
    }
  }

  async function loadDocumentText() {
    try {
      documentText = await apiJson("/api/v1/extraction-jobs/" + encodeURIComponent(jobId) + "/document-text");
    } catch (error) {
      documentText = null; // not extracted yet: tried again on the next state change
    }
  }

  async function render(job) {
    root.dataset.state = job.state;
    root.dataset.stateVersion = String(job.state_version);
    const state = document.getElementById("job-state");
    state.textContent = job.state;
    state.className = "state state-" + job.state.toLowerCase();
    document.getElementById("job-version").textContent = String(job.state_version);
    document.getElementById("job-updated").textContent = new Date(job.updated_at).toLocaleString();
    const error = document.getElementById("job-error");
    error.textContent = job.error ? job.error.class + (job.error.detail ? ": " + job.error.detail : "") : "";
    renderBundle(job);
    const review = document.getElementById("review-link");
    if (review) review.hidden = job.state !== "REVIEW_REQUIRED";
    const usage = (job.result && job.result.usage) || null;
    document.getElementById("job-model").textContent = job.result ? job.result.model : "";
    document.getElementById("job-latency").textContent =
      usage && usage.latency_ms != null ? (usage.latency_ms / 1000).toFixed(1) + " s" : "";
    document.getElementById("job-tokens").textContent =
      usage && usage.input_tokens != null ? usage.input_tokens + " / " + usage.output_tokens : "";
    if (job.result && shownResultVersion !== job.state_version) {
      if (!documentText) await loadDocumentText();
      // A slower render of an older version must not overwrite a newer one.
      if (versions.known(jobId) !== job.state_version) return;
      shownResultVersion = job.state_version;
      renderFields(job.result);
      renderValidation(job.result.validation);
      renderDocument(job.result);
    }
  }

  async function refresh() { return reader.read(jobId); }

  function onNotice(frame) {
    if (frame.job_id === jobId && versions.isNewer(jobId, frame.state_version)) reader.read(jobId);
  }

  function onMode(mode) {
    const badge = document.getElementById("live-mode");
    badge.textContent = { live: "live", polling: "polling", connecting: "connecting…" }[mode];
    badge.dataset.mode = mode;
  }

  refresh().finally(() => new LiveJobs({ jobId, onNotice, onResync: refresh, onMode }).start());
})();
