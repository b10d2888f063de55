"""The egress rule (DLV-4) refuses every non-public target BEFORE any connection is made.

This machine forbids traffic to non-loopback addresses, so nothing here may connect to one:
name resolution is a fake resolver (never real DNS) and every socket connect is guarded."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from delivery import egress
from delivery.egress import EgressRefused, vet_url
from tests.delivery.support import fake_resolver


@pytest.fixture(autouse=True)
def no_dns(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError(f"real DNS was asked: {args!r}")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)


SSRF_TABLE = [
    "https://127.0.0.1/hook",
    "http://127.0.0.1:8000/hook",
    "https://10.0.0.1/hook",
    "https://172.16.5.4/hook",
    "https://192.168.1.1/hook",
    "https://169.254.169.254/latest/meta-data/",
    "https://[::1]/hook",
    "https://[::ffff:127.0.0.1]/hook",
    "https://[::ffff:7f00:1]/hook",
    "https://[::169.254.169.254]/hook",
    "https://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of 169.254.169.254
    "https://[2002:a9fe:a9fe::]/hook",  # 6to4 of 169.254.169.254
    "https://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
    "https://[fd00:ec2::254]/hook",  # AWS metadata over IPv6
    "https://[fe80::1]/hook",
    "https://[ff02::1]/hook",
    "https://[::]/hook",
    "https://2130706433/hook",
    "https://0177.0.0.1/hook",
    "https://0x7f.0.0.1/hook",
    "https://127.1/hook",
    "https://0.0.0.0/hook",
    "https://100.64.0.1/hook",
    "https://100.100.100.200/hook",  # Alibaba metadata (CGNAT range)
    "https://168.63.129.16/hook",  # Azure wire server
    "https://224.0.0.1/hook",
    "https://255.255.255.255/hook",
    "https://198.18.0.1/hook",
]


@pytest.mark.parametrize("url", SSRF_TABLE)
def test_ssrf_target_is_refused_before_any_connection(url, connect_guard, settings):
    settings.EGRESS_ALLOW_LOOPBACK = False
    with pytest.raises(EgressRefused):
        vet_url(url)
    assert connect_guard.attempts == []


@pytest.mark.parametrize("url", [u for u in SSRF_TABLE if urlsplit(u).hostname not in ("127.0.0.1", "::1")])
def test_loopback_switch_allows_nothing_but_plain_loopback(url, connect_guard, settings):
    settings.EGRESS_ALLOW_LOOPBACK = True
    with pytest.raises(EgressRefused):
        vet_url(url)
    assert connect_guard.attempts == []


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1:8000/erp/demo/webhooks", "127.0.0.1"),
        ("https://127.0.0.2/hook", "127.0.0.2"),
        ("http://[::1]:8000/hook", "::1"),
    ],
)
def test_loopback_switch_allows_plain_loopback(url, address, settings):
    settings.EGRESS_ALLOW_LOOPBACK = True
    assert vet_url(url).addresses == (address,)


def test_a_name_resolving_to_a_private_address_is_refused(connect_guard):
    resolver = fake_resolver({"erp.example.com": ["10.1.2.3"]})
    with pytest.raises(EgressRefused, match="private"):
        vet_url("https://erp.example.com/hook", resolver=resolver)
    assert connect_guard.attempts == []


def test_a_name_with_any_bad_address_among_good_ones_is_refused(connect_guard):
    resolver = fake_resolver({"erp.example.com": ["93.184.216.34", "2606:2800:220:1::1", "169.254.169.254"]})
    with pytest.raises(EgressRefused, match="link-local"):
        vet_url("https://erp.example.com/hook", resolver=resolver)
    assert connect_guard.attempts == []


def test_a_name_resolving_to_a_mapped_loopback_is_refused_even_with_the_switch(connect_guard, settings):
    settings.EGRESS_ALLOW_LOOPBACK = True
    resolver = fake_resolver({"rebind.example.com": ["::ffff:127.0.0.1"]})
    with pytest.raises(EgressRefused, match="IPv4-mapped"):
        vet_url("https://rebind.example.com/hook", resolver=resolver)


def test_an_unresolvable_name_is_refused():
    with pytest.raises(EgressRefused, match="does not resolve"):
        vet_url("https://nowhere.example.com/hook", resolver=fake_resolver({}))


def test_a_public_name_is_pinned_to_its_vetted_addresses_with_host_kept():
    resolver = fake_resolver({"erp.example.com": ["93.184.216.34", "2606:2800:220:1::1"]})
    target = vet_url("https://ERP.example.com/hooks/in?tenant=7", resolver=resolver)
    assert target.addresses == ("93.184.216.34", "2606:2800:220:1::1")
    assert target.host == "erp.example.com"  # TLS SNI and certificate check
    assert target.host_header == "erp.example.com"
    assert target.path == "/hooks/in?tenant=7"


@pytest.mark.parametrize(
    "url, reason",
    [
        ("http://erp.example.com/hook", "https"),
        ("ftp://erp.example.com/hook", "https"),
        ("https://user:pw@erp.example.com/hook", "credentials"),
        ("https://erp.example.com:22/hook", "port"),
        ("https:///hook", "no host"),
        ("https://erp.example.com/hook\nX-Injected: 1", "single line"),
    ],
)
def test_url_shape_is_refused(url, reason):
    resolver = fake_resolver({"erp.example.com": ["93.184.216.34"]})
    with pytest.raises(EgressRefused, match=reason):
        vet_url(url, resolver=resolver)


def test_http_to_loopback_is_refused_without_the_switch(settings):
    settings.EGRESS_ALLOW_LOOPBACK = False
    with pytest.raises(EgressRefused, match="https"):
        vet_url("http://127.0.0.1:8000/erp/demo/webhooks")


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::"])
def test_public_addresses_and_their_embedded_forms_are_allowed(address):
    assert egress.address_refusal(address) is None
