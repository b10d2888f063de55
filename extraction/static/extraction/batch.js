/*
 * A batch's page: its counts by state, progress and a page of its files, kept live on the
 * same job notices the job list uses (live.js; all the tenant's jobs, as on the home page).
 *
 * 1. A notice for a job of the rows shown: re-read that job (StatusReader, monotonic by
 *    state_version) and redraw its state.
 * 2. Any notice, or a resync: re-read the batch's summary (GET the batch with page_size=1),
 *    at most once a second, and redraw the counts, the progress and the completion time. A
 *    notice names only a job, and the jobs of the batch's other pages are not known here.
 * 3. A resync also re-reads the shown jobs that are not finished yet.
 */
(function () {
  "use strict";
  const { LiveJobs, JobVersions, StatusReader, apiJson } = window.ExtractionUI;

  const SUMMARY_MIN_INTERVAL_MS = 1000;

  const root = document.getElementById("batch");
  const batchId = root.dataset.batchId;
  const finishedStates = new Set(root.dataset.finishedStates.split(","));
  const modeBadge = document.getElementById("live-mode");
  const versions = new JobVersions();
  const rows = new Map(); // job id → <tr>
  for (const row of document.querySelectorAll("#item-rows tr[data-job-id]")) {
    rows.set(row.dataset.jobId, row);
    versions.accept(row.dataset.jobId, Number(row.dataset.stateVersion));
  }
  const reader = new StatusReader(versions, renderJob);

  function renderJob(job) {
    const row = rows.get(job.job_id);
    if (!row) return;
    row.dataset.stateVersion = String(job.state_version);
    const cell = row.querySelector("[data-role=state]");
    cell.textContent = job.state;
    cell.className = "state state-" + job.state.toLowerCase();
  }

  function renderSummary(summary) {
    let finished = 0;
    for (const [state, count] of Object.entries(summary.states)) {
      const row = document.querySelector('#state-counts tr[data-state="' + state + '"] [data-role=count]');
      if (row) row.textContent = String(count);
      if (finishedStates.has(state)) finished += count;
    }
    document.getElementById("batch-accepted").textContent = String(summary.accepted);
    document.getElementById("batch-refused").textContent = String(summary.refused);
    const progress = document.getElementById("batch-progress");
    progress.max = summary.accepted;
    progress.value = finished;
    document.getElementById("batch-finished").textContent = String(finished);
    if (summary.completed_at) {
      document.getElementById("batch-completed").textContent = new Date(summary.completed_at).toLocaleString();
    }
  }

  let summaryTimer = null;
  let lastSummaryAt = 0;

  async function readSummary() {
    lastSummaryAt = Date.now();
    const summary = await apiJson("/api/v1/extraction-batches/" + encodeURIComponent(batchId) + "?page_size=1");
    renderSummary(summary);
  }

  function scheduleSummary() {
    if (summaryTimer !== null) return;
    const wait = Math.max(0, lastSummaryAt + SUMMARY_MIN_INTERVAL_MS - Date.now());
    summaryTimer = setTimeout(() => {
      summaryTimer = null;
      readSummary().catch(() => {});
    }, wait);
  }

  function onNotice(frame) {
    if (rows.has(frame.job_id) && versions.isNewer(frame.job_id, frame.state_version)) reader.read(frame.job_id);
    if (frame.type === "job.changed") scheduleSummary();
  }

  async function onResync() {
    const before = document.getElementById("batch-finished").textContent;
    await readSummary();
    const reads = [];
    for (const [jobId, row] of rows) {
      const state = row.querySelector("[data-role=state]").textContent;
      if (!finishedStates.has(state)) reads.push(reader.read(jobId));
    }
    const changed = await Promise.all(reads);
    return changed.some(Boolean) || before !== document.getElementById("batch-finished").textContent;
  }

  function onMode(mode) {
    modeBadge.textContent = { live: "live", polling: "polling", connecting: "connecting…" }[mode];
    modeBadge.dataset.mode = mode;
  }

  new LiveJobs({ jobId: null, onNotice, onResync, onMode }).start();
})();
