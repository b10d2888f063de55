/*
 * The home page: upload invoices by drag and drop (or the file input) with per-file
 * progress, and a job list kept live over the socket (polling when it is down).
 *
 * Upload of one file: XMLHttpRequest POST /api/v1/documents (for upload progress), then
 * POST /api/v1/extraction-jobs with an Idempotency-Key made once per file, so a retry after
 * a lost answer, a 429 or a 503 (honouring Retry-After) can never create a second job.
 */
(function () {
  "use strict";
  const { LiveJobs, JobVersions, StatusReader, apiJson, csrfToken, newIdempotencyKey, backoffMs } = window.ExtractionUI;

  const UPLOAD_CONCURRENCY = 3;
  const JOB_CREATE_ATTEMPTS = 6;

  const versions = new JobVersions();
  const rows = new Map(); // job id → <tr>
  const fileNames = new Map(); // job id → the file name uploaded from this page
  const jobList = document.getElementById("job-rows");
  const uploadList = document.getElementById("upload-rows");
  const modeBadge = document.getElementById("live-mode");
  const reader = new StatusReader(versions, renderJob);

  // --- the job list ----------------------------------------------------------------------------

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function summary(job) {
    const output = job.result && job.result.output;
    if (job.state === "REVIEW_REQUIRED" && job.result) {
      return "needs review: " + (job.result.validation.reasons || []).join(", ");
    }
    if (output && output.totals && output.totals.gross && output.totals.gross.value !== null) {
      const currency = output.currency && output.currency.value ? " " + output.currency.value : "";
      const number = output.invoice_number && output.invoice_number.value ? output.invoice_number.value + " · " : "";
      return number + output.totals.gross.value + currency;
    }
    if (job.error) return job.error.class;
    return "";
  }

  function renderJob(job) {
    let row = rows.get(job.job_id);
    const fresh = !row;
    if (fresh) {
      row = document.createElement("tr");
      rows.set(job.job_id, row);
    }
    row.dataset.jobId = job.job_id;
    row.dataset.state = job.state;
    row.dataset.stateVersion = String(job.state_version);
    row.replaceChildren();
    const link = document.createElement("a");
    link.href = "/jobs/" + encodeURIComponent(job.job_id) + "/";
    link.textContent = fileNames.get(job.job_id) || job.job_id.slice(0, 8);
    const first = document.createElement("td");
    first.appendChild(link);
    row.appendChild(first);
    const state = cell(job.state, "state state-" + job.state.toLowerCase());
    state.dataset.role = "state";
    row.appendChild(state);
    row.appendChild(cell(String(job.state_version), "num"));
    row.appendChild(cell(new Date(job.created_at).toLocaleString()));
    row.appendChild(cell(summary(job)));
    if (fresh) insertByCreation(row, job.created_at);
    document.getElementById("no-jobs").hidden = rows.size > 0;
  }

  function insertByCreation(row, createdAt) {
    row.dataset.createdAt = createdAt;
    for (const other of jobList.children) {
      if (other.dataset.createdAt < createdAt) { jobList.insertBefore(row, other); return; }
    }
    jobList.appendChild(row);
  }

  async function loadJobs() {
    const page = await apiJson("/api/v1/extraction-jobs?page_size=200");
    let changed = false;
    for (const job of page.results) {
      if (versions.accept(job.job_id, job.state_version)) { renderJob(job); changed = true; }
    }
    return changed;
  }

  function onNotice(frame) {
    // Snapshot entries for jobs older than the list's first page are not shown.
    if (frame.type === "job.snapshot" && !rows.has(frame.job_id)) return;
    if (versions.isNewer(frame.job_id, frame.state_version)) reader.read(frame.job_id);
  }

  function onMode(mode) {
    modeBadge.textContent = { live: "live", polling: "polling", connecting: "connecting…" }[mode];
    modeBadge.dataset.mode = mode;
  }

  // --- uploads ---------------------------------------------------------------------------------

  const queue = [];
  let active = 0;

  function enqueue(files) {
    for (const file of files) {
      const row = document.createElement("tr");
      const progress = document.createElement("progress");
      progress.max = 1;
      progress.value = 0;
      const status = cell("waiting");
      const progressCell = document.createElement("td");
      progressCell.appendChild(progress);
      row.append(cell(file.name), cell(Math.ceil(file.size / 1024) + " KiB", "num"), progressCell, status);
      row.dataset.fileName = file.name;
      uploadList.appendChild(row);
      document.getElementById("uploads").hidden = false;
      queue.push({ file, row, progress, status, key: newIdempotencyKey() });
    }
    pump();
  }

  function pump() {
    while (active < UPLOAD_CONCURRENCY && queue.length) {
      const item = queue.shift();
      active += 1;
      upload(item).finally(() => { active -= 1; pump(); });
    }
  }

  function sendDocument(item) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", "/api/v1/documents");
      xhr.setRequestHeader("X-CSRFToken", csrfToken());
      xhr.setRequestHeader("Accept", "application/json");
      xhr.upload.onprogress = (event) => {
        if (event.lengthComputable) item.progress.value = event.loaded / event.total;
      };
      xhr.onload = () => {
        let body = null;
        try { body = JSON.parse(xhr.responseText); } catch (error) { body = null; }
        if (xhr.status === 201) resolve(body);
        else reject(new Error((body && (body.detail || body.title)) || "upload failed (HTTP " + xhr.status + ")"));
      };
      xhr.onerror = () => reject(new Error("network error"));
      const form = new FormData();
      form.append("file", item.file, item.file.name);
      xhr.send(form);
    });
  }

  async function createJob(item, documentId) {
    for (let attempt = 0; attempt < JOB_CREATE_ATTEMPTS; attempt += 1) {
      let response;
      try {
        response = await fetch("/api/v1/extraction-jobs", {
          method: "POST",
          credentials: "same-origin",
          headers: { "Content-Type": "application/json", Accept: "application/json",
                     "X-CSRFToken": csrfToken(), "Idempotency-Key": item.key },
          // invoice.v2: the allowances, charges and VAT breakdown of an e-invoice are shown too.
          body: JSON.stringify({ document_id: documentId, schema: "invoice.v2" }),
        });
      } catch (error) {
        response = null; // lost answer: the same key makes the retry safe
      }
      if (response && response.status === 202) return response.json();
      if (response && ![429, 503].includes(response.status)) {
        const body = await response.json().catch(() => null);
        throw new Error((body && (body.detail || body.title)) || "HTTP " + response.status);
      }
      const retryAfter = response ? Number(response.headers.get("Retry-After")) : NaN;
      const wait = Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 1000 + backoffMs(attempt, 1000, 30000);
      item.status.textContent = "busy, retrying in " + Math.round(wait / 1000) + " s";
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
    throw new Error("the service stayed busy; try again later");
  }

  async function upload(item) {
    try {
      item.status.textContent = "uploading";
      const documentBody = await sendDocument(item);
      item.progress.value = 1;
      item.status.textContent = "submitting";
      const accepted = await createJob(item, documentBody.id);
      fileNames.set(accepted.job_id, item.file.name);
      item.row.dataset.jobId = accepted.job_id;
      item.status.replaceChildren();
      const link = document.createElement("a");
      link.href = "/jobs/" + encodeURIComponent(accepted.job_id) + "/";
      link.textContent = "job " + accepted.job_id.slice(0, 8);
      item.status.appendChild(link);
      if (!rows.has(accepted.job_id)) {
        renderJob({ job_id: accepted.job_id, state: accepted.state, state_version: 0,
                    created_at: new Date().toISOString(), result: null, error: null });
      } else {
        rows.get(accepted.job_id).querySelector("a").textContent = item.file.name;
      }
      reader.read(accepted.job_id);
    } catch (error) {
      item.status.textContent = "failed: " + error.message;
      item.row.classList.add("error");
    }
  }

  function setUpDropzone() {
    const zone = document.getElementById("dropzone");
    const input = document.getElementById("file-input");
    input.addEventListener("change", () => { enqueue(Array.from(input.files)); input.value = ""; });
    zone.addEventListener("click", (event) => { if (event.target !== input) input.click(); });
    zone.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); input.click(); }
    });
    ["dragenter", "dragover"].forEach((name) => zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.classList.add("over");
    }));
    ["dragleave", "drop"].forEach((name) => zone.addEventListener(name, (event) => {
      event.preventDefault();
      zone.classList.remove("over");
    }));
    zone.addEventListener("drop", (event) => enqueue(Array.from(event.dataTransfer.files)));
  }

  async function main() {
    setUpDropzone();
    try { await loadJobs(); } catch (error) { /* the live client's polling retries */ }
    new LiveJobs({ jobId: null, onNotice, onResync: loadJobs, onMode }).start();
  }

  main();
})();
