"""SSRF-safe egress for webhook delivery (DLV-4): the rule applies to the addresses we connect
to, not to the URL string.

1. Parse: ``https`` only (``http`` to loopback in development), no user info, an allowed port, and
   no numeric host but the dotted quad (C resolvers read ``2130706433`` as 127.0.0.1).
2. Resolve the host once (``getaddrinfo``; injectable for tests).
3. Refuse if ANY address is not public unicast, after unwrapping IPv6 forms that embed IPv4.
4. Connect only to a vetted address (no second lookup: no DNS rebinding); Host and TLS use the name.
5. Bound the exchange: one total deadline, a response-size cap, no redirects, no proxy variables.

``EGRESS_ALLOW_LOOPBACK=1`` (development only) allows 127.0.0.0/8 and ``::1`` and nothing else.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., list]

# Explicit denials, checked before ``is_global`` so a refusal names its reason, and so the
# rule does not depend on the interpreter's ``is_global`` tables (CPython before 3.11.10
# carried wrong ones: CVE-2024-4032).
_DENIED_V4: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),  # 0.0.0.0 reaches loopback on Linux
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),  # also Alibaba's metadata 100.100.100.200
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),  # cloud metadata 169.254.169.254
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255
    ("168.63.129.16/32", "cloud metadata"),  # Azure's wire server sits on a public address
)
_DENIED_V6: tuple[tuple[str, str], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo"),  # the embedded IPv4 address is obfuscated: refuse outright
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("fc00::/7", "unique local"),  # includes AWS metadata fd00:ec2::254
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_V4_NETWORKS = tuple((ipaddress.ip_network(n), why) for n, why in _DENIED_V4)
_V6_NETWORKS = tuple((ipaddress.ip_network(n), why) for n, why in _DENIED_V6)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_LOOPBACK_V4 = ipaddress.ip_network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.ip_address("::1")

# A host made only of digits, hex and dots is an IP literal to a C resolver, whatever its
# notation; only the canonical dotted quad is taken as such, everything else is refused.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*\.?$", re.IGNORECASE)
_DEFAULT_PORTS = {"https": 443, "http": 80}


class EgressRefused(Exception):
    """The URL or one of its addresses may not be connected to. Raised before any connection."""


@dataclass(frozen=True)
class VettedTarget:
    """A URL whose every resolved address passed the egress rule: connect only to these."""

    scheme: str
    host: str  # the name for Host and TLS SNI
    port: int
    path: str  # path and query, as sent in the request line
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == _DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"


def loopback_allowed() -> bool:
    return bool(settings.EGRESS_ALLOW_LOOPBACK)


def _is_loopback(ip: IPAddress) -> bool:
    return ip in _LOOPBACK_V4 if ip.version == 4 else ip == _LOOPBACK_V6


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip in _SIX_TO_FOUR:
        return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF), "6to4"
    # IPv4-compatible ::a.b.c.d (deprecated, still routed by some stacks); :: and ::1 excluded.
    if int(ip) >> 32 == 0 and int(ip) > 1:
        return ipaddress.IPv4Address(int(ip)), "IPv4-compatible"
    return None


def address_refusal(address: str | IPAddress, *, allow_loopback: bool = False) -> str | None:
    """Why ``address`` may not be connected to, or None if it may.

    Loopback is allowed only in its plain forms (127.0.0.0/8, ::1) and only with
    ``allow_loopback``; an IPv6 form embedding 127.0.0.1 is refused either way.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    except ValueError:
        return f"{address!r} is not an IP address"
    if allow_loopback and _is_loopback(ip):
        return None
    if ip.version == 6:
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            inner, form = embedded
            why = address_refusal(inner, allow_loopback=False)
            return f"{ip} is {form} {inner}, {why}" if why else None
        for network, why in _V6_NETWORKS:
            if ip in network:
                return f"{ip} is {why} ({network})"
    else:
        for network, why in _V4_NETWORKS:
            if ip in network:
                return f"{ip} is {why} ({network})"
    if not ip.is_global:
        return f"{ip} is not a global address"
    return None


def _allowed_ports() -> frozenset[int]:
    return frozenset(getattr(settings, "WEBHOOK_ALLOWED_PORTS", (443, 8443)))


def _split(url: str, *, allow_loopback: bool) -> tuple[str, str, int, str]:
    if not isinstance(url, str) or len(url) > 2048 or any(ch.isspace() or ord(ch) < 0x20 for ch in url):
        raise EgressRefused("the URL is not a single line of at most 2048 characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise EgressRefused(f"the URL cannot be parsed: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme != "https" and not (scheme == "http" and allow_loopback):
        raise EgressRefused("only https URLs are allowed")
    if parts.username is not None or parts.password is not None:
        raise EgressRefused("credentials in the URL are not allowed")
    if parts.fragment:
        raise EgressRefused("a fragment is not allowed")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise EgressRefused("the URL has no host")
    port = port or _DEFAULT_PORTS[scheme]
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port, path


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        # Integer, octal, hex or short forms: a C resolver reads them as an address (usually
        # not the one a person sees). Never ambiguous on our side: refused.
        try:
            meant = ipaddress.IPv4Address(socket.inet_aton(host))
            raise EgressRefused(f"{host!r} is a non-canonical IPv4 literal (it means {meant})")
        except OSError:
            raise EgressRefused(f"{host!r} is a numeric host that is not an IP address") from None
    return None


def resolve(host: str, port: int, resolver: Resolver | None = None) -> list[str]:
    """All addresses of ``host``, in resolver order. Looked up once per send."""
    lookup = resolver or socket.getaddrinfo
    try:
        infos = lookup(host, port, 0, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise EgressRefused(f"{host!r} does not resolve: {exc}") from exc
    addresses: list[str] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6) and sockaddr[0] not in addresses:
            addresses.append(str(sockaddr[0]))
    if not addresses:
        raise EgressRefused(f"{host!r} has no IPv4 or IPv6 address")
    return addresses


def vet_url(url: str, *, resolver: Resolver | None = None, allow_loopback: bool | None = None) -> VettedTarget:
    """The egress rule, applied at registration and before every send. Raises EgressRefused."""
    allow_loopback = loopback_allowed() if allow_loopback is None else allow_loopback
    scheme, host, port, path = _split(url, allow_loopback=allow_loopback)
    literal = _literal(host)
    addresses = [str(literal)] if literal is not None else resolve(host, port, resolver)
    for address in addresses:
        why = address_refusal(address, allow_loopback=allow_loopback)
        if why:
            raise EgressRefused(f"{host} → {why}")
    if scheme == "http" and not all(_is_loopback(ipaddress.ip_address(a.split("%")[0])) for a in addresses):
        raise EgressRefused("plain http is allowed only to loopback (development switch)")
    everything_loopback = all(_is_loopback(ipaddress.ip_address(a.split("%")[0])) for a in addresses)
    if port not in _allowed_ports() and not (allow_loopback and everything_loopback):
        raise EgressRefused(f"port {port} is not allowed")
    host_for_tls = str(literal) if literal is not None else host
    return VettedTarget(scheme=scheme, host=host_for_tls, port=port, path=path, addresses=tuple(addresses))


# --- the request -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EgressResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes  # at most max_bytes
    truncated: bool
    elapsed_ms: int


class EgressTimeout(Exception):
    """No complete answer within the deadline: the outcome at the receiver is unknown."""


class EgressConnectionError(Exception):
    """No vetted address accepted a connection (or TLS failed)."""


class _PinnedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to one vetted address; TLS SNI and certificate checks use the name."""

    def __init__(self, target: VettedTarget, address: str, timeout: float, tls: ssl.SSLContext | None) -> None:
        super().__init__(address, target.port, timeout=timeout)
        self._target = target
        self._tls = tls

    def connect(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect((self.host, self.port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._tls is not None:
                sock = self._tls.wrap_socket(sock, server_hostname=self._target.host)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


_TLS_CONTEXT: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    global _TLS_CONTEXT
    if _TLS_CONTEXT is None:
        context = ssl.create_default_context()
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        _TLS_CONTEXT = context
    return _TLS_CONTEXT


def post(
    target: VettedTarget, body: bytes, headers: Iterable[tuple[str, str]], *, timeout: float, max_response_bytes: int
) -> EgressResponse:
    """POST ``body`` to a vetted target within one total ``timeout``; never follows redirects.

    Tries the vetted addresses in order until one connects. A watchdog shuts the socket down
    at the deadline, so a receiver that drips its answer byte by byte cannot hold a worker
    longer than ``timeout``.
    """
    started = time.monotonic()
    deadline = started + timeout
    tls = _tls_context() if target.scheme == "https" else None
    last_error: Exception | None = None
    for address in target.addresses:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        conn = _PinnedConnection(target, address, timeout=remaining, tls=tls)
        try:
            conn.connect()
        except (OSError, ssl.SSLError) as exc:
            last_error = exc
            conn.close()
            continue
        return _exchange(conn, target, body, headers, deadline, started, max_response_bytes)
    if last_error is None or isinstance(last_error, TimeoutError):
        raise EgressTimeout(f"no connection within {timeout:.1f}s")
    raise EgressConnectionError(f"{type(last_error).__name__}: {last_error}")


def _exchange(
    conn: _PinnedConnection,
    target: VettedTarget,
    body: bytes,
    headers: Iterable[tuple[str, str]],
    deadline: float,
    started: float,
    max_response_bytes: int,
) -> EgressResponse:
    timed_out = threading.Event()

    def _expire() -> None:
        timed_out.set()
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass

    watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), _expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.putrequest("POST", target.path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", target.host_header)
        for name, value in headers:
            conn.putheader(name, value)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        chunks: list[bytes] = []
        size = 0
        truncated = False
        while True:
            chunk = response.read(min(16 * 1024, max_response_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_response_bytes:
                truncated = True
                break
        data = b"".join(chunks)[:max_response_bytes]
        status = response.status
        response_headers = {k.lower(): v for k, v in response.getheaders()}
    except (OSError, http.client.HTTPException, ssl.SSLError) as exc:
        if timed_out.is_set() or isinstance(exc, TimeoutError):
            raise EgressTimeout(f"no complete answer within the deadline ({type(exc).__name__})") from exc
        raise EgressConnectionError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        watchdog.cancel()
        conn.close()
    if timed_out.is_set():
        raise EgressTimeout("no complete answer within the deadline")
    return EgressResponse(
        status=status,
        headers=response_headers,
        body=data,
        truncated=truncated,
        elapsed_ms=int((time.monotonic() - started) * 1000),
    )
