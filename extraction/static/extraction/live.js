/*
 * Live job notices for the web UI (NTF-1), no build step.
 *
 * 1. POST /api/v1/notification-tickets (session + CSRF) → a single-use ticket and the
 *    socket URL; open it with the subprotocols ["jobs.v1", "ticket.<ticket>"] — never a
 *    credential in the URL.
 * 2. Send {"type": "subscribe", "job_id", "cursor"}; the cursor is the last event_id seen, so
 *    a reconnect gets a bounded replay (or a snapshot when too far behind).
 * 3. Every notice only says "job X is now at state_version V": the page re-reads the job's
 *    status URL when V is newer than what it shows, and never moves a job back to an older
 *    state_version (notices repeat and cross each other).
 * 4. Socket down: reconnect with exponential backoff and full jitter; meanwhile poll the
 *    REST API, also with backoff and jitter (1 s doubling to 30 s, back to 1 s after a change).
 * 5. Socket up: still re-read everything about once a minute (jittered). The channel layer
 *    may drop a notice under load, and a dropped notice is otherwise noticed only at the
 *    job's next one.
 */
(function () {
  "use strict";

  const SUBPROTOCOL = "jobs.v1";
  const LIVE_RESYNC_MS = 60000;

  function csrfToken() {
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    if (input) return input.value;
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  // Full jitter: a random wait in [0, min(cap, base * 2^attempt)], so that many clients
  // reconnecting after the same outage do not come back in lockstep.
  function backoffMs(attempt, baseMs, capMs) {
    return Math.random() * Math.min(capMs, baseMs * Math.pow(2, attempt));
  }

  function newIdempotencyKey() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  async function apiJson(url, options) {
    const opts = Object.assign({ credentials: "same-origin", headers: {} }, options || {});
    opts.headers = Object.assign({ Accept: "application/json" }, opts.headers);
    if (opts.method && opts.method !== "GET") opts.headers["X-CSRFToken"] = csrfToken();
    const response = await fetch(url, opts);
    const body = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) {
      const error = new Error((body && (body.detail || body.title)) || "HTTP " + response.status);
      error.status = response.status;
      error.body = body;
      throw error;
    }
    return body;
  }

  /* The highest state_version shown per job: the one rule that keeps the UI monotonic. */
  class JobVersions {
    constructor() { this.versions = new Map(); }
    known(jobId) { return this.versions.get(jobId) || 0; }
    isNewer(jobId, version) { return version > this.known(jobId); }
    /* Record a job body read from the API; false when it is older than what is shown. */
    accept(jobId, version) {
      if (version < this.known(jobId)) return false;
      this.versions.set(jobId, version);
      return true;
    }
  }

  /*
   * options: jobId (null = all the tenant's jobs), onNotice(frame), onResync() (re-read
   * everything over REST: after a reconnect and on every poll), onMode(mode) with mode in
   * "connecting" | "live" | "polling".
   */
  class LiveJobs {
    constructor(options) {
      this.jobId = options.jobId || null;
      this.onNotice = options.onNotice;
      this.onResync = options.onResync;
      this.onMode = options.onMode || function () {};
      this.cursor = null;
      this.socket = null;
      this.failures = 0;
      this.pollAttempt = 0;
      this.pollTimer = null;
      this.reconnectTimer = null;
      this.resyncTimer = null;
      this.stopped = false;
    }

    start() { this.connect(); }

    stop() {
      this.stopped = true;
      clearTimeout(this.pollTimer);
      clearTimeout(this.reconnectTimer);
      clearTimeout(this.resyncTimer);
      if (this.socket) this.socket.close();
    }

    async connect() {
      if (this.stopped) return;
      this.onMode("connecting");
      let ticket;
      try {
        ticket = await apiJson("/api/v1/notification-tickets", { method: "POST" });
      } catch (error) {
        this.socketFailed();
        return;
      }
      let socket;
      try {
        socket = new WebSocket(ticket.ws_url, ticket.subprotocols);
      } catch (error) {
        this.socketFailed();
        return;
      }
      this.socket = socket;
      let opened = false;
      socket.onopen = () => {
        opened = true;
        socket.send(JSON.stringify({ type: "subscribe", job_id: this.jobId, cursor: this.cursor }));
      };
      socket.onmessage = (message) => this.handleFrame(JSON.parse(message.data));
      socket.onclose = (event) => {
        if (this.socket !== socket) return;
        this.socket = null;
        clearTimeout(this.resyncTimer);
        if (event.code === 4403) {
          // Authorization revoked: stop listening; the REST calls will say why.
          this.onMode("polling");
          this.schedulePoll();
          return;
        }
        if (opened) this.failures = 0;
        this.socketFailed();
      };
    }

    handleFrame(frame) {
      if (frame.type === "subscribed") {
        this.cursor = frame.event_id;
        this.failures = 0;
        this.stopPolling();
        this.onMode("live");
        // Anything that committed while we were away and is not in the replay (see
        // catch_up's note on commit order) is picked up by one REST re-read.
        this.onResync();
        this.scheduleLiveResync();
        return;
      }
      if (frame.type === "job.changed" || frame.type === "job.snapshot") {
        if (frame.type === "job.changed" && (this.cursor === null || frame.event_id > this.cursor)) {
          this.cursor = frame.event_id;
        }
        this.onNotice(frame);
      }
    }

    socketFailed() {
      if (this.stopped) return;
      this.failures += 1;
      this.onMode("polling");
      this.schedulePoll();
      const wait = 500 + backoffMs(this.failures, 1000, 30000);
      clearTimeout(this.reconnectTimer);
      this.reconnectTimer = setTimeout(() => this.connect(), wait);
    }

    schedulePoll() {
      if (this.pollTimer !== null) return;
      const wait = 1000 + backoffMs(this.pollAttempt, 1000, 30000);
      this.pollTimer = setTimeout(async () => {
        this.pollTimer = null;
        if (this.socket && this.socket.readyState === WebSocket.OPEN) return;
        let changed = false;
        try { changed = await this.onResync(); } catch (error) { changed = false; }
        this.pollAttempt = changed ? 0 : this.pollAttempt + 1;
        this.schedulePoll();
      }, wait);
    }

    scheduleLiveResync() {
      clearTimeout(this.resyncTimer);
      this.resyncTimer = setTimeout(() => {
        this.onResync();
        this.scheduleLiveResync();
      }, LIVE_RESYNC_MS * (0.8 + 0.4 * Math.random()));
    }

    stopPolling() {
      clearTimeout(this.pollTimer);
      this.pollTimer = null;
      this.pollAttempt = 0;
    }
  }

  /* Re-reads a job's status at most once at a time; a notice during a read triggers one more. */
  class StatusReader {
    constructor(versions, onJob) {
      this.versions = versions;
      this.onJob = onJob;
      this.inFlight = new Set();
      this.again = new Set();
    }

    async read(jobId) {
      if (this.inFlight.has(jobId)) { this.again.add(jobId); return false; }
      this.inFlight.add(jobId);
      let changed = false;
      try {
        const job = await apiJson("/api/v1/extraction-jobs/" + encodeURIComponent(jobId));
        if (this.versions.accept(job.job_id, job.state_version)) {
          this.onJob(job);
          changed = true;
        }
      } finally {
        this.inFlight.delete(jobId);
        if (this.again.delete(jobId)) this.read(jobId);
      }
      return changed;
    }
  }

  window.ExtractionUI = { LiveJobs, JobVersions, StatusReader, apiJson, csrfToken, newIdempotencyKey, backoffMs };
})();
