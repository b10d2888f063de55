"""Jobs and their life: documents, extraction jobs, the per-job event log and the outbox.

The job state machine (who may move a job from where to where) lives in
:mod:`extraction.execution.lifecycle`; this module holds the tables and the invariants the database
itself enforces.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, models
from django.db.models import Q
from django.db.models.functions import Now
from django.db.models.lookups import Exact

from accounts.models import Tenant
from config.sql import load_statements

SQL = load_statements(Path(__file__).with_suffix(".sql"))


class DocumentQuerySet(models.QuerySet):
    def reference(self, *, tenant_id: uuid.UUID, document_id: uuid.UUID) -> Document | None:
        """The tenant's document as a job request names it: id, version and size, in one small
        plain-SQL query, as the accept path runs it for every request. Other columns load on
        first access."""
        with connection.cursor() as cursor:
            cursor.execute(SQL["document_reference"], {"tenant": tenant_id, "document": document_id})
            row = cursor.fetchone()
        if row is None:
            return None
        return Document.from_db(
            self.db, ["id", "tenant_id", "version", "size"], [document_id, tenant_id, row[0], row[1]]
        )


class Document(models.Model):
    """Uploaded bytes. Identity is the content digest plus an immutable version id (ACC-4):
    uploading the same bytes again returns this row, whatever the file name."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="documents")
    sha256 = models.CharField(max_length=64)
    version = models.UUIDField(default=uuid.uuid4, editable=False)
    size = models.PositiveBigIntegerField()
    content_type = models.CharField(max_length=64)
    storage_name = models.CharField(max_length=255)
    original_filename = models.CharField(max_length=255, blank=True)
    # The pages an image can be rendered of (a PDF's pages, an image's frames; 1 for XML, the
    # form-feed pages of text), counted at upload; null where the bytes could not be counted.
    page_count = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    objects = DocumentQuerySet.as_manager()

    class Meta:
        db_table = "documents"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "sha256"], name="document_unique_digest_per_tenant"),
        ]


class JobState(models.TextChoices):
    ACCEPTED = "ACCEPTED"  # committed with its outbox event; not yet taken in by ingress
    READY = "READY"
    RUNNING = "RUNNING"
    RETRY_SCHEDULED = "RETRY_SCHEDULED"
    SUCCEEDED = "SUCCEEDED"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    FAILED_TERMINAL = "FAILED_TERMINAL"
    # The document held several invoices: each has a job of its own (a part), this one ends here.
    SPLIT = "SPLIT"


RUNNABLE_STATES = (JobState.READY, JobState.RETRY_SCHEDULED)
# Jobs that hold a share of the tenant's admission budget. REVIEW_REQUIRED is not terminal (a
# reviewer still decides) but holds no capacity either.
PENDING_STATES = (JobState.ACCEPTED, JobState.READY, JobState.RUNNING, JobState.RETRY_SCHEDULED)


class PriorityClass(models.TextChoices):
    INTERACTIVE = "interactive"
    BATCH = "batch"


class ExtractionJob(models.Model):
    """The authoritative record of one extraction request."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="jobs")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="jobs")
    document_version = models.UUIDField()
    idempotency_key = models.CharField(max_length=255)
    request_hash = models.CharField(max_length=64)
    schema = models.CharField(max_length=32)
    model_policy = models.CharField(max_length=64)
    options = models.JSONField(default=dict)
    priority_class = models.CharField(max_length=16, choices=PriorityClass.choices, default=PriorityClass.BATCH)

    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.ACCEPTED)
    state_version = models.PositiveIntegerField(default=1)
    attempt = models.PositiveIntegerField(default=0)
    max_attempts = models.PositiveIntegerField()
    fence = models.BigIntegerField(default=0)
    lease_owner = models.CharField(max_length=128, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    available_at = models.DateTimeField(db_default=Now())
    deadline_at = models.DateTimeField()

    estimated_tokens = models.PositiveIntegerField()
    byte_size = models.PositiveBigIntegerField()
    error_class = models.CharField(max_length=64, blank=True, default="")
    error_detail = models.TextField(blank=True, default="")
    # The W3C trace context (traceparent, tracestate) of the request that accepted the job:
    # every later step, in any process, joins the job's trace through it. {} when untraced.
    trace_context = models.JSONField(default=dict, db_default={}, blank=True)
    # A part of a bundle (extraction.execution.splitting): the SPLIT job whose document holds it,
    # and its pages there, first to last (1-based, inclusive). Null for a job of a whole document.
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="parts")
    first_page = models.PositiveIntegerField(null=True, blank=True)
    last_page = models.PositiveIntegerField(null=True, blank=True)

    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "extraction_jobs"
        constraints = [
            # A part has its parent and its pages; a whole document's job has neither.
            models.CheckConstraint(
                condition=Q(parent__isnull=True, first_page__isnull=True, last_page__isnull=True)
                | Q(parent__isnull=False, first_page__gte=1, last_page__gte=models.F("first_page")),
                name="job_part_has_parent_and_pages",
            ),
            models.UniqueConstraint(fields=["tenant", "idempotency_key"], name="job_unique_idempotency_key"),
            models.CheckConstraint(condition=Q(state__in=JobState.values), name="job_state_valid"),
            models.CheckConstraint(condition=Q(priority_class__in=PriorityClass.values), name="job_priority_valid"),
            # A RUNNING job always has an owner and a lease the reaper can expire.
            models.CheckConstraint(
                condition=~Q(state=JobState.RUNNING) | Q(lease_until__isnull=False),
                name="job_running_has_lease",
            ),
            models.CheckConstraint(condition=Q(attempt__lte=models.F("max_attempts")), name="job_attempts_bounded"),
        ]
        indexes = [
            # count_eligible_jobs (the scheduler's wake-ups): runnable jobs by availability.
            # lease_until and the heartbeat stay out of every index so heartbeats are HOT updates.
            models.Index(
                fields=["available_at", "id"],
                name="job_runnable_idx",
                condition=Q(state__in=RUNNABLE_STATES),
            ),
            # claim_next_job (fair share): each tenant's next runnable jobs per priority class.
            models.Index(
                fields=["tenant", "priority_class", "available_at"],
                name="job_fair_claim_idx",
                condition=Q(state__in=RUNNABLE_STATES),
            ),
            # reap_expired_leases and the claim's running-per-tenant count: the few RUNNING rows.
            models.Index(fields=["tenant"], name="job_running_tenant_idx", condition=Q(state=JobState.RUNNING)),
            # expire_deadlines and the recovery of ACCEPTED jobs whose ingress message was lost.
            models.Index(
                fields=["deadline_at"],
                name="job_pending_deadline_idx",
                condition=Q(state__in=(JobState.ACCEPTED, JobState.READY, JobState.RETRY_SCHEDULED)),
            ),
            # The tenant's job list, newest first.
            models.Index(fields=["tenant", "-created_at"], name="job_tenant_created_idx"),
            # A split job's parts, in page order (the parent's status lists them).
            models.Index(fields=["parent", "first_page"], name="job_parts_idx", condition=Q(parent__isnull=False)),
            # The review queue (/metrics' size and oldest wait, the self-audit's overdue items):
            # the few REVIEW_REQUIRED rows, by when they arrived there.
            models.Index(
                fields=["updated_at"], name="job_review_queue_idx", condition=Q(state=JobState.REVIEW_REQUIRED)
            ),
        ]


class JobEvent(models.Model):
    """One row per transition of a job, numbered by the job's ``state_version``.

    The bigserial ``id`` is the cursor notifications replay from (NTF-1)."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="events")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    state_version = models.PositiveIntegerField()
    from_state = models.CharField(max_length=16, blank=True, default="")
    to_state = models.CharField(max_length=16, choices=JobState.choices)
    reason = models.CharField(max_length=64, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "job_events"
        constraints = [
            models.UniqueConstraint(fields=["job", "state_version"], name="job_event_unique_version"),
        ]
        indexes = [
            # Tenant-wide replay after a reconnect: events after a cursor.
            models.Index(fields=["tenant", "id"], name="job_event_tenant_cursor_idx"),
        ]


class OutboxEvent(models.Model):
    """An event committed with the state change that caused it (ACC-5, EXE-3, DLQ-2).

    The relay publishes it and then sets ``published_at``; ``event_id`` is the message id at
    every hop, so consumers dedupe on it."""

    event_id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    job = models.ForeignKey(ExtractionJob, null=True, blank=True, on_delete=models.CASCADE, related_name="outbox")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=64)
    payload = models.JSONField()
    created_at = models.DateTimeField(db_default=Now())
    published_at = models.DateTimeField(null=True, blank=True)
    # A relay claims rows for a bounded time; a crashed relay's claims expire and are retaken.
    claimed_until = models.DateTimeField(null=True, blank=True)
    publish_attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True, default="")
    # The trace context of the step that wrote the event, written in its transaction; the relay
    # publishes in a child span of it ({}: the job's own trace context instead).
    trace_context = models.JSONField(default=dict, db_default={}, blank=True)

    class Meta:
        db_table = "outbox_events"
        indexes = [
            # The relay's query: unpublished rows, oldest first. Published rows leave the index.
            models.Index(fields=["created_at"], name="outbox_unpublished_idx", condition=Q(published_at__isnull=True)),
        ]


class ExecutionInbox(models.Model):
    """Messages whose execution responsibility moved into PostgreSQL (BRK-2): one row per
    ``event_id``, however many times the broker redelivers it."""

    event_id = models.UUIDField(primary_key=True)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="inbox")
    payload_digest = models.CharField(max_length=64)
    received_at = models.DateTimeField(db_default=Now())
    # Where a Kafka record came from (BRK-6): the first record of the event taken in. Empty for
    # a RabbitMQ message, which has no coordinates.
    source_topic = models.CharField(max_length=249, null=True, blank=True)
    source_partition = models.IntegerField(null=True, blank=True)
    source_offset = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "execution_inbox"


class QuarantinedMessage(models.Model):
    """A redelivered ``event_id`` whose payload differs from the one taken in (BRK-3)."""

    id = models.BigAutoField(primary_key=True)
    # None: a Kafka record without a readable event id (a poison record).
    event_id = models.UUIDField(null=True)
    job_id = models.UUIDField(null=True)
    stored_digest = models.CharField(max_length=64)
    received_digest = models.CharField(max_length=64)
    payload = models.JSONField()
    reason = models.CharField(max_length=64)
    received_at = models.DateTimeField(db_default=Now())
    # A Kafka record's coordinates: its consumer commits past it only once this row is committed.
    topic = models.CharField(max_length=249, null=True, blank=True)
    partition = models.IntegerField(null=True, blank=True)
    offset = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "quarantined_messages"
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "partition", "offset"],
                condition=Q(topic__isnull=False),
                name="quarantined_record_coordinates_uniq",
            )
        ]


class EventLogRecord(models.Model):
    """A record of the event log as one consumer group read it (``manage.py replay_events
    --into-audit``): the log is consumed independently of the ingress (BRK-6)."""

    id = models.BigAutoField(primary_key=True)
    consumer_group = models.CharField(max_length=249)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    offset = models.BigIntegerField()
    event_id = models.UUIDField(null=True)
    event_type = models.CharField(max_length=100)
    job_id = models.UUIDField(null=True)
    state_version = models.IntegerField(null=True)
    record_timestamp = models.DateTimeField(null=True)
    read_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "event_log_records"
        constraints = [
            models.UniqueConstraint(
                fields=["consumer_group", "topic", "partition", "offset"], name="event_log_record_coordinates_uniq"
            )
        ]


class AttemptOutcome(models.TextChoices):
    RUNNING = "running"  # not ended yet
    SUCCEEDED = "succeeded"
    REVIEW_REQUIRED = "review_required"
    INVALID_OUTPUT = "invalid_output"
    RATE_LIMITED = "rate_limited"
    TIMEOUT = "timeout"
    PROVIDER_ERROR = "provider_error"
    PERMANENT_ERROR = "permanent_error"
    UNREADABLE_DOCUMENT = "unreadable_document"
    LEASE_LOST = "lease_lost"
    STALE_COMPLETION = "stale_completion"
    UNCERTAIN = "uncertain"
    CAPACITY_DEFERRED = "capacity_deferred"  # admission said no: the attempt is handed back unspent
    SHUTDOWN = "shutdown"  # the worker stopped before calling the model and handed the job back
    # The worker's shutdown grace ran out during the model call: the call (possibly billed) was
    # abandoned and the job handed back under a new fence, its attempt counter restored.
    INTERRUPTED = "interrupted"
    # The document held several invoices: the attempt split the job into its parts, no model called.
    SPLIT = "split"


class Attempt(models.Model):
    """The attempt ledger: one row per claim of a job, with what the provider said."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="attempts")
    number = models.PositiveIntegerField()
    fence = models.BigIntegerField()
    worker_id = models.CharField(max_length=128)
    started_at = models.DateTimeField(db_default=Now())
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=32, choices=AttemptOutcome.choices, default=AttemptOutcome.RUNNING)
    provider = models.CharField(max_length=32, blank=True, default="")
    model = models.CharField(max_length=128, blank=True, default="")
    provider_request_id = models.CharField(max_length=128, blank=True, default="")
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    retry_after_seconds = models.FloatField(null=True, blank=True)
    error_detail = models.TextField(blank=True, default="")

    class Meta:
        db_table = "extraction_attempts"
        constraints = [
            models.UniqueConstraint(fields=["job", "fence"], name="attempt_unique_fence"),
            models.CheckConstraint(condition=Q(outcome__in=AttemptOutcome.values), name="attempt_outcome_valid"),
        ]


class ExtractionResult(models.Model):
    """The accepted output of a job, written in the completing transaction (EXE-3)."""

    job = models.OneToOneField(ExtractionJob, primary_key=True, on_delete=models.CASCADE, related_name="result")
    output = models.JSONField()
    validation = models.JSONField(default=dict)
    policy_version = models.CharField(max_length=32)
    attempt_number = models.PositiveIntegerField()
    fence = models.BigIntegerField()
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "extraction_results"


class InvoiceFingerprint(models.Model):
    """One way of naming the invoice a job read (VAL-5): its document type, its supplier (by VAT
    id, IBAN or name), its number, and its issue date or gross total, as one normalized key.
    The first job of a tenant to claim a key holds it; a later job whose invoice has a key
    another job holds is a possible duplicate of that job. The unique constraint decides
    between two copies completing at once (extraction/validation/duplicates.sql)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    fingerprint = models.CharField(max_length=600)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="+")
    # What the key is made of, as the job read it: {"supplier": {"vat_id": …}, "invoice_number": …, …}
    matched = models.JSONField()
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "invoice_fingerprints"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "fingerprint"], name="invoice_fingerprint_unique_per_tenant"),
        ]


class ExtractedText(models.Model):
    """A document version's text, extracted once by a worker and kept: evidence offsets in
    every result of this document refer to these exact page strings."""

    document = models.OneToOneField(Document, primary_key=True, on_delete=models.CASCADE, related_name="text")
    pages = models.JSONField()
    source = models.CharField(max_length=32)
    embedded_xml_name = models.CharField(max_length=255, blank=True, default="")
    # The page printing the document's e-invoice XML (see extraction.intake.text.DocumentText).
    einvoice_page = models.PositiveSmallIntegerField(null=True, blank=True)
    # Where each page's words are printed (extraction.intake.geometry.geometry_to_json): per page
    # a list of [start, end, x0, y0, x1, y1, line] or null; null for text extracted before.
    geometry = models.JSONField(null=True, blank=True)
    extracted_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "document_texts"
        constraints = [
            # The printed e-invoice is the last page, so providers read the pages before it
            # with their numbers unchanged (DocumentText.for_providers).
            models.CheckConstraint(
                condition=Q(einvoice_page=models.Func(models.F("pages"), function="jsonb_array_length")),
                name="document_text_einvoice_page_is_last",
            ),
            # One geometry entry per page, so page n's words are at index n - 1 (a null geometry
            # makes the comparison null, which a check lets pass).
            models.CheckConstraint(
                condition=Exact(
                    models.Func(models.F("geometry"), function="jsonb_array_length"),
                    models.Func(models.F("pages"), function="jsonb_array_length"),
                ),
                name="document_text_geometry_per_page",
            ),
        ]


class Supplier(models.Model):
    """A tenant's supplier master data: what an extracted supplier must match (VAL-1)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="suppliers")
    name = models.CharField(max_length=200)
    vat_id = models.CharField(max_length=32, help_text="Normalized: upper case, no spaces.")
    iban = models.CharField(max_length=34, blank=True, default="", help_text="Normalized: upper case, no spaces.")
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "suppliers"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "vat_id"], name="supplier_unique_vat_id_per_tenant"),
        ]

    # Judged by clean() (the supplier rule) on their normalized values, which it covers whole:
    # the generic blank/max_length checks would judge the typed text (" DE 136 695 976 ") first.
    RULE_FIELDS = ("name", "vat_id", "iban")

    def __str__(self) -> str:
        return f"{self.name} ({self.vat_id})"

    def clean_fields(self, exclude: Collection[str] | None = None) -> None:
        super().clean_fields(exclude={*(exclude or ()), *self.RULE_FIELDS})

    def clean(self) -> None:
        """The supplier rule, for the admin form and the CSV import alike: normalize name, VAT id
        and IBAN in place, then raise every problem at once, by field."""
        # Imported here: extraction.validation.suppliers imports this module.
        from extraction.validation.suppliers import normalize_iban, normalize_vat_id, supplier_problems

        self.name = " ".join((self.name or "").split())
        self.vat_id = normalize_vat_id(self.vat_id or "")
        self.iban = normalize_iban(self.iban or "")
        problems = supplier_problems(name=self.name, vat_id=self.vat_id, iban=self.iban)
        if problems:
            raise ValidationError(problems)


class ReviewDecision(models.Model):
    """The audit of a reviewer's decision on a REVIEW_REQUIRED job: who, when, before/after."""

    class Decision(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="review_decisions")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=16, choices=Decision.choices)
    state_version = models.PositiveIntegerField(help_text="The job's state_version the decision was made on.")
    before = models.JSONField()
    after = models.JSONField(null=True, blank=True)
    validation = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "review_decisions"
        constraints = [
            # One decision per reviewed state: two reviewers acting at once cannot both win.
            models.UniqueConstraint(fields=["job", "state_version"], name="review_one_decision_per_state"),
        ]


class ProviderPool(models.Model):
    """A provider pool's limits, editable in the admin; a row overrides settings.PROVIDER_POOLS
    for the pool of the same name (BP-2: the limiter's scope is the pool, not the pod)."""

    class Budget(models.TextChoices):
        REQUESTS = "requests"  # hosted API: requests/min, tokens/min and in-flight requests
        KV_TOKENS = "kv_tokens"  # local vLLM: tokens in flight against the KV-cache budget (BP-6)
        # No shared budget: every call is granted and nothing is counted; a 429 retries its own
        # job but cools nobody else down (a server that queues for itself, or a baseline to
        # measure the shared budget against).
        UNLIMITED = "unlimited"

    name = models.CharField(max_length=64, primary_key=True)
    requests_per_minute = models.PositiveIntegerField()
    tokens_per_minute = models.PositiveIntegerField()
    max_in_flight = models.PositiveIntegerField()
    reserved_tokens = models.PositiveIntegerField(help_text="Token reservation per request when not estimated.")
    max_output_tokens = models.PositiveIntegerField()
    budget = models.CharField(max_length=16, choices=Budget.choices, default=Budget.REQUESTS)
    kv_cache_tokens = models.PositiveIntegerField(default=0, help_text="For kv_tokens pools: tokens in flight.")
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "provider_pools"


class OperatorActionKind(models.TextChoices):
    RERUN_EXTRACTION = "rerun_extraction"
    CANCEL_JOBS = "cancel_jobs"
    REDELIVER_WEBHOOKS = "redeliver_webhooks"


class OperatorActionStatus(models.TextChoices):
    RUNNING = "running"
    COMPLETED = "completed"


class OperatorAction(models.Model):
    """The audit of one bulk operation an operator ran (re-run, cancel, redeliver by filter):
    who, through which door, the filter as given, and what it did to each object it matched
    (:class:`OperatorActionTarget`). Written before the first object is touched, so an action
    interrupted half-way still says what it had set out to do."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # NULL: a platform operator's action across tenants (a management command without --tenant).
    tenant = models.ForeignKey(Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="operator_actions")
    kind = models.CharField(max_length=32, choices=OperatorActionKind.choices)
    actor = models.CharField(max_length=200, help_text="user:<username>, token:<prefix> or cli:<os user>")
    channel = models.CharField(max_length=16, help_text="api, admin or cli")
    filter = models.JSONField(help_text="The filter as the operator gave it.")
    dry_run = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=OperatorActionStatus.choices, default=OperatorActionStatus.RUNNING)
    matched = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(db_default=Now())
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "operator_actions"
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=OperatorActionKind.values), name="operator_action_kind_valid"),
            models.CheckConstraint(
                condition=Q(status__in=OperatorActionStatus.values), name="operator_action_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(changed__lte=models.F("matched")), name="operator_action_changed_le_matched"
            ),
            models.CheckConstraint(
                condition=Q(status=OperatorActionStatus.RUNNING, finished_at__isnull=True)
                | Q(status=OperatorActionStatus.COMPLETED, finished_at__isnull=False),
                name="operator_action_finished_when_completed",
            ),
        ]
        indexes = [models.Index(fields=["tenant", "-created_at"], name="operator_action_tenant_idx")]


class OperatorActionTarget(models.Model):
    """What one bulk action did to one job or delivery it matched: ``changed``, or the reason
    it was left alone (another actor moved it first, the tenant's admission budget is full)."""

    id = models.BigAutoField(primary_key=True)
    action = models.ForeignKey(OperatorAction, on_delete=models.CASCADE, related_name="targets")
    object_id = models.UUIDField(help_text="The job's id (re-run, cancel) or the delivery's id (redeliver).")
    outcome = models.CharField(max_length=32)
    from_state = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "operator_action_targets"
        constraints = [
            models.UniqueConstraint(fields=["action", "object_id"], name="operator_action_target_once"),
        ]
        indexes = [models.Index(fields=["object_id"], name="operator_action_target_obj_idx")]


class SupersededResult(models.Model):
    """A result a re-run replaced: the job's earlier output and verdict, kept so the job's
    history still explains what was once decided (the live result is one row per job)."""

    id = models.BigAutoField(primary_key=True)
    job = models.ForeignKey(ExtractionJob, on_delete=models.CASCADE, related_name="superseded_results")
    output = models.JSONField()
    validation = models.JSONField(default=dict)
    policy_version = models.CharField(max_length=32)
    attempt_number = models.PositiveIntegerField()
    fence = models.BigIntegerField()
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=128)
    created_at = models.DateTimeField()
    superseded_at = models.DateTimeField(db_default=Now())
    superseded_by = models.ForeignKey(OperatorAction, on_delete=models.PROTECT, related_name="+")

    class Meta:
        db_table = "extraction_superseded_results"


class BatchSource(models.TextChoices):
    FILES = "files"  # many file parts of one multipart request
    ARCHIVE = "archive"  # one zip archive


class ExtractionBatch(models.Model):
    """Many files accepted in one request (``POST /api/v1/extraction-batches``) under one
    idempotency key and one set of job options. Each file's outcome, a job or the problem that
    refused it, is an :class:`ExtractionBatchItem` (extraction/intake/batches.py)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="batches")
    idempotency_key = models.CharField(max_length=255)
    # Over the job options and every file's digest in order (or the archive's): the same key
    # with another request is a conflict, as for a job.
    request_hash = models.CharField(max_length=64)
    source = models.CharField(max_length=16, choices=BatchSource.choices)
    schema = models.CharField(max_length=32)
    # The job options as the API names them (model_policy, priority, deadline_seconds), defaults applied.
    options = models.JSONField(default=dict)
    file_count = models.PositiveIntegerField()
    created_at = models.DateTimeField(db_default=Now())
    # When every file had its item; null while the acceptance runs, or if it was interrupted
    # (a replay with the same key completes it).
    accepted_at = models.DateTimeField(null=True, blank=True)
    # When every job of the batch (and every part of a split one) was found terminal, set once
    # in the transaction that writes extraction.batch_completed.v1.
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "extraction_batches"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "idempotency_key"], name="batch_unique_idempotency_key"),
            models.CheckConstraint(condition=Q(source__in=BatchSource.values), name="batch_source_valid"),
            models.CheckConstraint(
                condition=Q(completed_at__isnull=True) | Q(accepted_at__isnull=False),
                name="batch_completed_after_accepted",
            ),
        ]
        indexes = [
            # The completion sweep: the few batches accepted and not yet completed.
            models.Index(
                fields=["accepted_at"],
                name="batch_open_idx",
                condition=Q(completed_at__isnull=True, accepted_at__isnull=False),
            ),
        ]


class ExtractionBatchItem(models.Model):
    """One file of a batch: its job, or the problem that refused it (exactly one of the two).
    Written in the transaction that accepts the file's job, so a committed job of a batch
    always has its item."""

    id = models.BigAutoField(primary_key=True)
    batch = models.ForeignKey(ExtractionBatch, on_delete=models.CASCADE, related_name="items")
    # The file's place in the request (or among the archive's files), from 0.
    position = models.PositiveIntegerField()
    # The name as sent, for display only: never used as a path.
    filename = models.CharField(max_length=255, blank=True, default="")
    # Null when the file was refused before it was stored (too large, not a document, …).
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    job = models.ForeignKey(ExtractionJob, null=True, blank=True, on_delete=models.PROTECT, related_name="batch_items")
    # RFC 9457 problem details of a refusal: {"type", "title", "status", "detail", …}.
    problem = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "extraction_batch_items"
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="batch_item_unique_position"),
            models.CheckConstraint(
                condition=Q(job__isnull=False, problem__isnull=True) | Q(job__isnull=True, problem__isnull=False),
                name="batch_item_job_or_problem",
            ),
        ]
