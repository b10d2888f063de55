"""Running the project's processes on a namespace "host" (tests/cluster/netns.py) as they would
run on a machine of their own: every service reached through the bridge, and a hostname of the
host's own. Shared by the worker-host scenario (test_worker_host_cut.py) and the scaling
benchmark (bench/scale.py).
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from tests.cluster.netns import Host, Network

# The environment's URLs of loopback services that a process in a namespace must reach through
# a forwarder (PostgreSQL is named by POSTGRES_HOST/POSTGRES_PORT instead).
SERVICE_URLS = ("BROKER_URL", "REDIS_URL", "CHANNELS_REDIS_URL", "OPENAI_BASE_URL")


def through_forwarder(url: str, network: Network) -> str:
    """``url`` (a service on 127.0.0.1) as a process in one of ``network``'s namespaces reaches it:
    the same URL on the bridge's address, through a forwarder of that port (made on first use)."""
    parts = urlsplit(url)
    if parts.hostname != "127.0.0.1" or parts.port is None:
        raise ValueError(f"{url!r}: only a loopback service with an explicit port can be forwarded")
    if all(forwarder.listen[1] != parts.port for forwarder in network.forwarders):
        network.forward(parts.port)
    userinfo = parts.netloc.rpartition("@")[0]
    address = f"{network.gateway}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{address}" if userinfo else address))


def namespace_env(env: Mapping[str, str], network: Network) -> dict[str, str]:
    """``env`` with PostgreSQL and every service URL it names reached through the bridge: inside
    a namespace 127.0.0.1 is the namespace's own loopback, where nothing listens."""
    if env.get("POSTGRES_HOST", "127.0.0.1") != "127.0.0.1" or "," in env.get("POSTGRES_PORT", ""):
        raise ValueError("only a single PostgreSQL on 127.0.0.1 can be forwarded")
    postgres = through_forwarder(f"postgres://127.0.0.1:{env.get('POSTGRES_PORT', '5432')}", network)
    rewritten = {key: through_forwarder(env[key], network) for key in SERVICE_URLS if env.get(key)}
    return {**env, "POSTGRES_HOST": network.gateway, "POSTGRES_PORT": str(urlsplit(postgres).port), **rewritten}


def run_on_host(
    host: Host, argv: Sequence[str], env: Mapping[str, str], *, log: Path, cwd: Path
) -> subprocess.Popen[Any]:
    """Start ``argv`` inside ``host`` in a UTS namespace whose hostname is the host's name, so
    that what the process calls itself (an llm worker's id is ``hostname:pid:rand``) says which
    host it ran on. ``unshare`` execs the shell, which execs ``argv``: the Popen's pid and
    process group are the program's."""
    wrapped = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host.name, *argv]
    return host.run(wrapped, env, log=log, cwd=cwd)
