"""A PostgreSQL 15 primary and a streaming replica of it, for the cluster scenarios (issue #23).

Debian's binaries (``/usr/lib/postgresql/15/bin``) are run as the ``postgres`` OS user through
``runuser``: initdb and the server refuse to run as root. What follows from that, and the other
choices made here:

- The data directory and the socket directory cannot live under ``base_dir``: pytest's
  ``/tmp/pytest-of-root`` is mode 0700, so ``postgres`` cannot even traverse it. Each instance
  gets a ``postgres``-owned work directory from ``mkdtemp`` in the system temp dir (symlinked as
  ``base_dir/<name>-data`` while it exists) and removes it on teardown.
- The server log still lands in ``base_dir``: ``pg_ctl`` is run without ``-l``, so the postmaster
  inherits the log file we (root) opened as its stdout and stderr and writes through that fd.
- The instance-specific settings (port, listen address, socket directory, ``cluster_name``) sit
  in ``instance.conf``, included from ``postgresql.conf``: ``pg_basebackup`` copies the primary's
  configuration, and the replica then only rewrites that one file.
- Trust authentication for loopback (and any ``trust_networks``), ``wal_level=replica`` with
  WAL senders and ``wal_keep_size`` so a replica keeps up without a slot, and ``fsync`` and
  ``full_page_writes`` off: the tests kill servers, they never pull the power, and what a killed
  server wrote is in the kernel's page cache. ``synchronous_commit`` stays on: off, a commit
  acknowledged within the last ``wal_writer_delay`` would be lost by ``stop("immediate")``,
  a loss the system under test must never see from a server crash. Replication is asynchronous,
  as CloudNativePG's default: a promoted standby may miss the primary's last commits.
- ``pg_ctl`` starts the postmaster in a session of its own (``setsid``): teardown kills that
  process group (the postmaster and its backends) by the pid ``postmaster.pid`` gave at start.
  A run that died without its teardown leaves a work directory whose ``owner`` record names no
  live process: :func:`kill_stale_servers` removes it and its server.

The Django settings a scenario uses with these (:func:`django_env`): ``POSTGRES_HOST=
127.0.0.1,127.0.0.1``, ``POSTGRES_PORT=5441,5442``, ``POSTGRES_TARGET_SESSION_ATTRS=read-write``;
:func:`multi_host_conninfo` builds the same conninfo for psycopg. Measured here with psycopg
3.3.9 (libpq 18): a refused port or a standby in the list costs milliseconds, a host that does
not answer costs the whole ``connect_timeout`` (psycopg tries the hosts one after the other, the
timeout applies to each). initdb + start ~1.2 s, ``pg_basebackup`` ~0.4 s, streaming ~0.2 s
after, ``restart("fast")`` ~0.25 s, ``stop("immediate")`` ~0.12 s, ``promote()`` ~0.13 s.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import psycopg

from tests.cluster.netns import owner_alive, owner_record
from tests.system import wait_for

PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_USER = "postgres"
# Work directories (data, sockets) of our instances in the system temp dir: see the module docstring.
WORK_PREFIX = "ct-pg-"


def multi_host_conninfo(
    ports: Sequence[int],
    dbname: str = "postgres",
    *,
    host: str = "127.0.0.1",
    target_session_attrs: str = "read-write",
    connect_timeout: int = 2,
) -> str:
    """The libpq conninfo the project's settings build from comma-separated POSTGRES_HOST and
    POSTGRES_PORT: libpq tries the hosts in order and keeps the first that is read-write.
    ``connect_timeout`` bounds each host that does not answer (a refused port costs ~nothing)."""
    hosts = ",".join([host] * len(ports))
    port_list = ",".join(str(port) for port in ports)
    return (
        f"host={hosts} port={port_list} user={PG_USER} dbname={dbname} "
        f"target_session_attrs={target_session_attrs} connect_timeout={connect_timeout}"
    )


def kill_stale_servers() -> list[str]:
    """Remove what an earlier run left behind when it died without its teardown: every work
    directory of ours (``/tmp/ct-pg-*``) whose ``owner`` names no live process, after SIGKILLing
    its postmaster's process group (the pid in ``postmaster.pid``, if it still runs on that data
    directory). Returns the directories removed; a live run's are left alone."""
    removed = []
    for work_dir in Path(tempfile.gettempdir()).glob(f"{WORK_PREFIX}*"):
        try:
            record = (work_dir / "owner").read_text()
        except OSError:
            record = ""
        if owner_alive(record):
            continue
        data_dir = work_dir / "data"
        try:
            pid = int((data_dir / "postmaster.pid").read_text().split("\n", 1)[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if str(data_dir).encode() in cmdline:
                os.killpg(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass  # no postmaster.pid, or no such process any more
        shutil.rmtree(work_dir, ignore_errors=True)
        removed.append(str(work_dir))
    return removed


def django_env(*instances: PostgresInstance, host: str = "127.0.0.1", connect_timeout: int = 2) -> dict[str, str]:
    """The environment a project process needs to use ``instances`` in this order (primary
    first): ``POSTGRES_HOST``/``POSTGRES_PORT`` lists and ``read-write`` session attrs. ``host``
    is what the process dials: 127.0.0.1, or a bridge address with forwarders for a namespace."""
    return {
        "POSTGRES_HOST": ",".join([host] * len(instances)),
        "POSTGRES_PORT": ",".join(str(instance.port) for instance in instances),
        "POSTGRES_TARGET_SESSION_ATTRS": "read-write",
        "POSTGRES_CONNECT_TIMEOUT": str(connect_timeout),
        "POSTGRES_USER": PG_USER,
        "POSTGRES_PASSWORD": "",
    }


class PostgresInstance:
    """One PostgreSQL server: its directories, ``pg_ctl`` and a few queries. See the subclasses."""

    role = "postgres"

    def __init__(
        self,
        base_dir: Path | str,
        port: int = 5441,
        *,
        listen_addresses: str = "127.0.0.1",
        trust_networks: Sequence[str] = (),
        start_timeout: float = 60.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.port = port
        self.name = f"{self.role}-{port}"
        self.listen_addresses = listen_addresses
        self.trust_networks = tuple(trust_networks)
        self.start_timeout = start_timeout
        # More postgresql.conf settings for this instance only, e.g. {"tcp_keepalives_idle": "2"}
        # or {"idle_in_transaction_session_timeout": "5s"}: written to instance.conf.
        self.settings = dict(settings or {})
        self.work_dir: Path | None = None
        self.log_file = self.base_dir / f"{self.name}.log"
        self._postmaster_pids: set[int] = set()  # every postmaster we started: teardown kills them all

    # -- directories ------------------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        return self._work() / "data"

    @property
    def socket_dir(self) -> Path:
        return self._work() / "sockets"

    def _work(self) -> Path:
        if self.work_dir is None:
            raise RuntimeError(f"{self.name} has no work directory yet")
        return self.work_dir

    def _make_work_dir(self) -> None:
        """A ``postgres``-owned directory outside pytest's 0700 tree (see the module docstring)."""
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{self.name}-"))
        (self.work_dir / "owner").write_text(owner_record() + "\n")  # for kill_stale_servers()
        (self.work_dir / "sockets").mkdir()
        user = pwd.getpwnam(PG_USER)
        for path in (self.work_dir, self.work_dir / "sockets"):
            os.chown(path, user.pw_uid, user.pw_gid)
        link = self.base_dir / f"{self.name}-data"
        link.unlink(missing_ok=True)
        link.symlink_to(self.work_dir)

    # -- running the tools ----------------------------------------------------------------------
    def _run(
        self, tool: str, *args: str, timeout: float = 120.0, log: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``tool`` as the postgres user. With ``log`` its output (and the output of a postmaster it
        starts, which inherits the fd) is appended to our log file; otherwise it is captured."""
        argv = ["runuser", "-u", PG_USER, "--", str(PG_BIN / tool), *args]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env["LC_ALL"] = "C.UTF-8"
        cwd = self.work_dir or "/"
        if log:
            with open(self.log_file, "ab") as out:
                completed = subprocess.run(
                    argv,
                    env=env,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                )
            return subprocess.CompletedProcess(argv, completed.returncode, "", "")
        return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def _run_ok(self, tool: str, *args: str, timeout: float = 120.0, log: bool = False) -> None:
        result = self._run(tool, *args, timeout=timeout, log=log)
        if result.returncode != 0:
            raise RuntimeError(
                f"{tool} {' '.join(args)} failed ({result.returncode}): {result.stdout}{result.stderr}\n{self.logs()}"
            )

    def _write_instance_conf(self) -> None:
        lines = [
            f"port = {self.port}",
            f"listen_addresses = '{self.listen_addresses}'",
            f"unix_socket_directories = '{self.socket_dir}'",
            f"cluster_name = '{self.name}'",  # also the walreceiver's application_name
            *(f"{name} = '{value}'" for name, value in self.settings.items()),
        ]
        path = self.data_dir / "instance.conf"
        path.write_text("\n".join(lines) + "\n")
        user = pwd.getpwnam(PG_USER)
        os.chown(path, user.pw_uid, user.pw_gid)

    # -- lifecycle --------------------------------------------------------------------------------
    def __enter__(self) -> PostgresInstance:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> float:
        """``pg_ctl start`` and wait (``-w``, bounded by ``start_timeout``) until it accepts
        connections. Returns the seconds it took."""
        began = time.monotonic()
        self._run_ok("pg_ctl", "start", "-D", str(self.data_dir), "-w", "-t", str(int(self.start_timeout)), log=True)
        self._remember_postmaster()
        return time.monotonic() - began

    def restart(self, mode: str = "fast") -> float:
        """``pg_ctl restart -m mode``: every session is cut (``fast`` rolls their transactions
        back, ``immediate`` skips the shutdown checkpoint). Returns the seconds until it accepts
        connections again."""
        began = time.monotonic()
        self._run_ok(
            "pg_ctl",
            "restart",
            "-D",
            str(self.data_dir),
            "-m",
            mode,
            "-w",
            "-t",
            str(int(self.start_timeout)),
            log=True,
        )
        self._remember_postmaster()
        return time.monotonic() - began

    def stop(self, mode: str = "immediate") -> float:
        """``pg_ctl stop -m mode`` (default ``immediate``: as a crash, no checkpoint, every
        backend SIGQUIT). Returns the seconds it took."""
        began = time.monotonic()
        self._run_ok("pg_ctl", "stop", "-D", str(self.data_dir), "-m", mode, "-w", "-t", "60", log=True)
        return time.monotonic() - began

    def promote(self) -> float:
        """``pg_ctl promote`` and wait until the server leaves recovery (it then accepts writes).
        Returns the seconds it took."""
        began = time.monotonic()
        self._run_ok("pg_ctl", "promote", "-D", str(self.data_dir), "-w", "-t", "60", log=True)
        wait_for(
            lambda: not self.in_recovery(), timeout=30, message=lambda: f"{self.name} out of recovery\n{self.logs()}"
        )
        return time.monotonic() - began

    def running(self) -> bool:
        if self.work_dir is None or not self.data_dir.exists():
            return False
        return self._run("pg_ctl", "status", "-D", str(self.data_dir), timeout=30).returncode == 0

    def _remember_postmaster(self) -> None:
        try:
            self._postmaster_pids.add(int((self.data_dir / "postmaster.pid").read_text().split("\n", 1)[0]))
        except (FileNotFoundError, ValueError):
            pass  # no pid file: the server is not up, pg_ctl said so already

    def _is_our_postmaster(self, pid: int) -> bool:
        """Whether ``pid`` is still a postgres of ours: its command line names our data dir."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return bool(cmdline) and cmdline[0].endswith(b"postgres") and str(self.data_dir).encode() in cmdline

    def close(self) -> None:
        """Stop the server (immediate), kill whatever of it is left (every postmaster we started,
        with its process group) and remove the work directory. The log in base_dir stays."""
        if self.work_dir is None:
            return
        if (self.data_dir / "postmaster.pid").exists():
            try:
                self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "immediate", "-w", "-t", "20", log=True)
            except subprocess.TimeoutExpired:
                pass  # the kill below does it
        self._remember_postmaster()
        for pid in self._postmaster_pids:
            if not self._is_our_postmaster(pid):
                continue  # exited long ago; the pid may be someone else's now
            try:
                os.killpg(pid, signal.SIGKILL)  # pg_ctl setsid()s the postmaster: its pid is the group
            except ProcessLookupError:
                pass
        shutil.rmtree(self.work_dir, ignore_errors=True)
        (self.base_dir / f"{self.name}-data").unlink(missing_ok=True)
        self.work_dir = None

    # -- clients ----------------------------------------------------------------------------------
    def dsn(self, dbname: str = "postgres") -> str:
        """A libpq conninfo for this server alone (TCP on 127.0.0.1, trust)."""
        return f"host=127.0.0.1 port={self.port} user={PG_USER} dbname={dbname} connect_timeout=5"

    def query(self, sql: str, dbname: str = "postgres") -> list[tuple[object, ...]]:
        """Run ``sql`` in autocommit and return its rows (none for a statement without)."""
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cursor = conn.execute(sql.encode())
            return list(cursor.fetchall()) if cursor.description else []

    def in_recovery(self) -> bool:
        return bool(self.query("SELECT pg_is_in_recovery()")[0][0])

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE name`` (once) and return its dsn."""
        if not self.query(f"SELECT 1 FROM pg_database WHERE datname = '{name}'"):
            self.query(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def logs(self, tail_chars: int = 6000) -> str:
        if not self.log_file.exists():
            return f"({self.log_file} does not exist)"
        return f"===== {self.log_file.name} =====\n{self.log_file.read_text(errors='replace')[-tail_chars:]}"


class PostgresPrimary(PostgresInstance):
    """A fresh primary: ``initdb`` and ``start`` on entering the context, gone on leaving it."""

    role = "primary"

    def __enter__(self) -> PostgresPrimary:
        try:
            self.init()
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def init(self) -> float:
        """``initdb`` (trust, UTF-8, no fsync) plus our configuration. Returns its seconds."""
        began = time.monotonic()
        self._make_work_dir()
        self._run_ok(
            "initdb",
            "-D",
            str(self.data_dir),
            "-U",
            PG_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        settings = [
            "include_if_exists = 'instance.conf'",
            "wal_level = replica",
            "max_wal_senders = 10",
            "wal_keep_size = '256MB'",
            "hot_standby = on",
            "max_connections = 200",
            "shared_buffers = '32MB'",
            "fsync = off",
            "full_page_writes = off",
            "log_line_prefix = '%m [%p] %q%u@%d '",
            "log_min_messages = info",
        ]
        with open(self.data_dir / "postgresql.conf", "a") as conf:
            conf.write("\n# tests/cluster/postgres_cluster.py\n" + "\n".join(settings) + "\n")
        hba = ["local all all trust", "local replication all trust"]
        for network in ("127.0.0.1/32", *self.trust_networks):
            hba += [f"host all all {network} trust", f"host replication all {network} trust"]
        (self.data_dir / "pg_hba.conf").write_text("\n".join(hba) + "\n")
        self._write_instance_conf()
        return time.monotonic() - began


class PostgresReplica(PostgresInstance):
    """A streaming standby of a running primary (``pg_basebackup -R``)."""

    role = "replica"

    def __init__(
        self,
        base_dir: Path | str,
        port: int,
        *,
        primary: PostgresInstance,
        listen_addresses: str = "127.0.0.1",
        trust_networks: Sequence[str] = (),
        start_timeout: float = 60.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            base_dir,
            port,
            listen_addresses=listen_addresses,
            trust_networks=trust_networks,
            start_timeout=start_timeout,
            settings=settings,
        )
        self.primary = primary
        self.basebackup_seconds: float | None = None

    @classmethod
    def from_primary(
        cls,
        primary: PostgresInstance,
        base_dir: Path | str,
        port: int = 5442,
        *,
        start: bool = True,
        listen_addresses: str = "127.0.0.1",
        start_timeout: float = 60.0,
        settings: Mapping[str, str] | None = None,
    ) -> PostgresReplica:
        """Clone ``primary`` with ``pg_basebackup -R -X stream -c fast`` (``-R`` writes
        ``standby.signal`` and ``primary_conninfo``), give it its own instance settings and,
        with ``start``, start it. Closes what it made if any step fails."""
        # The standby's pg_hba.conf is the primary's copy: same trusted networks.
        replica = cls(
            base_dir,
            port,
            primary=primary,
            listen_addresses=listen_addresses,
            trust_networks=primary.trust_networks,
            start_timeout=start_timeout,
            settings=settings,
        )
        try:
            began = time.monotonic()
            replica._make_work_dir()
            replica._run_ok(
                "pg_basebackup",
                "-h",
                "127.0.0.1",
                "-p",
                str(primary.port),
                "-U",
                PG_USER,
                "-D",
                str(replica.data_dir),
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            )
            replica.basebackup_seconds = time.monotonic() - began
            replica._write_instance_conf()
            if start:
                replica.start()
        except BaseException:
            replica.close()
            raise
        return replica

    def __enter__(self) -> PostgresReplica:
        return self

    def wait_streaming(self, timeout: float = 30.0) -> float:
        """Poll until this standby's WAL receiver reports ``streaming`` (it connects to the primary
        right after start; the poll bounds that). Returns the seconds it took."""
        began = time.monotonic()

        def streaming() -> bool:
            try:
                rows = self.query("SELECT status FROM pg_stat_wal_receiver")
            except psycopg.OperationalError:
                return False  # still starting
            return bool(rows) and rows[0][0] == "streaming"

        wait_for(streaming, timeout=timeout, interval=0.1, message=lambda: f"{self.name} streaming\n{self.logs()}")
        return time.monotonic() - began

    def replay_lag_bytes(self) -> int:
        """How far replay is behind what the primary has written (asked of both; primary up)."""
        primary_lsn = self.primary.query("SELECT pg_current_wal_lsn()")[0][0]
        return int(str(self.query(f"SELECT pg_wal_lsn_diff('{primary_lsn}', pg_last_wal_replay_lsn())")[0][0]))
