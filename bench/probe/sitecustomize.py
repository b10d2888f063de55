"""A statement and transaction counter for the execution benchmark (bench/execution_bench.py).

Put on ``PYTHONPATH`` with ``BENCH_SQL_PROBE_FILE`` set, it wraps psycopg's cursor ``execute``
and the connection's ``commit``/``rollback`` in every process it starts in, and writes the
cumulative counts to that file twice a second. PostgreSQL counts transactions per database only
(``pg_stat_database``); this tells which process spent them, and on what. Without the variable
it does nothing, so the processes run exactly as in production.

A transaction is named after its first statement: in autocommit mode every statement is its own
transaction; otherwise psycopg opened one implicitly and the commit or rollback ends it.

Each statement's wall time inside ``execute`` (the round trip as the calling thread waits it,
queueing for the GIL included) is added up per statement too.

It also adds up the CPU time (``time.thread_time``) threads spend inside the OpenAI provider's
``extract`` (the client side of the model call: the SDK building the request, HTTP, reading the
answer), so the benchmark can show the orchestration with and without it. The wrapper goes on
within half a second of the provider module's import, before any measured window.
"""

from __future__ import annotations

import os

_PATH = os.environ.get("BENCH_SQL_PROBE_FILE")


def _install(path: str) -> None:
    import atexit
    import json
    import threading
    import time
    from collections import Counter

    import psycopg

    lock = threading.Lock()
    transactions: Counter[str] = Counter()
    statements: Counter[str] = Counter()
    statement_seconds: Counter[str] = Counter()  # wall time in execute: the round trip as the process waits it
    open_transactions: dict[int, str] = {}
    labels: dict[str, str] = {}

    def label_of(query: object) -> str:
        text = query if isinstance(query, str) else str(query)
        known = labels.get(text)
        if known is None:
            # The first words say which step this is (the statements are fixed strings).
            known = " ".join(text.split())[:72] or "(empty: pool health check)"
            if len(labels) < 2000:
                labels[text] = known
        return known

    original_execute = psycopg.Cursor.execute
    original_executemany = psycopg.Cursor.executemany
    original_commit = psycopg.Connection.commit
    original_rollback = psycopg.Connection.rollback

    def note(cursor: psycopg.Cursor, query: object) -> str:
        label = label_of(query)
        conn = cursor.connection
        with lock:
            statements[label] += 1
            if conn.autocommit:
                transactions[label] += 1
            else:
                open_transactions.setdefault(id(conn), label)
        return label

    def timed(label: str, started: float) -> None:
        spent = time.perf_counter() - started
        with lock:
            statement_seconds[label] += spent

    def execute(self, query, params=None, *args, **kwargs):
        label = note(self, query)
        started = time.perf_counter()
        try:
            return original_execute(self, query, params, *args, **kwargs)
        finally:
            timed(label, started)

    def executemany(self, query, params_seq, *args, **kwargs):
        label = note(self, query)
        started = time.perf_counter()
        try:
            return original_executemany(self, query, params_seq, *args, **kwargs)
        finally:
            timed(label, started)

    def end(conn: psycopg.Connection, how: str) -> None:
        with lock:
            label = open_transactions.pop(id(conn), None)
            if label is not None:
                transactions[f"{label}" if how == "commit" else f"ROLLBACK: {label}"] += 1

    def commit(self):
        end(self, "commit")
        return original_commit(self)

    def rollback(self):
        end(self, "rollback")
        return original_rollback(self)

    psycopg.Cursor.execute = execute
    psycopg.Cursor.executemany = executemany
    psycopg.Connection.commit = commit
    psycopg.Connection.rollback = rollback

    model_call = {"calls": 0, "cpu_seconds": 0.0}

    def wrap_model_call() -> bool:
        import sys

        provider = getattr(sys.modules.get("extraction.providers.openai_compat"), "OpenAIProvider", None)
        if provider is None:  # not imported yet, or still importing
            return False
        original_extract = provider.extract

        def extract(self, request):
            started = time.thread_time()
            try:
                return original_extract(self, request)
            finally:
                spent = time.thread_time() - started
                with lock:
                    model_call["calls"] += 1
                    model_call["cpu_seconds"] += spent

        provider.extract = extract
        return True

    def dump() -> None:
        with lock:
            snapshot = {
                "pid": os.getpid(),
                "at": time.time(),
                "transactions": dict(transactions),
                "statements": dict(statements),
                "statement_seconds": dict(statement_seconds),
                "model_call": dict(model_call),
            }
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as handle:
            json.dump(snapshot, handle)
        os.replace(tmp, path)

    def dump_forever() -> None:
        wrapped = False
        while True:
            time.sleep(0.5)
            wrapped = wrapped or wrap_model_call()
            try:
                dump()
            except OSError:
                pass

    threading.Thread(target=dump_forever, name="bench-sql-probe", daemon=True).start()
    atexit.register(dump)


if _PATH:
    _install(_PATH)
