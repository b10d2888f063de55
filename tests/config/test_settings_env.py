"""Switches and numbers in the environment: the accepted spellings, and a misspelling stops the
process with the variable and its value instead of quietly reading as off or crashing later."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import env_bool, env_float, env_int

ROOT = Path(__file__).resolve().parents[2]


def _import_settings(**variables: str) -> subprocess.CompletedProcess[str]:
    """Import the settings in a fresh interpreter, as every process of the system does."""
    env = {**os.environ, "DJANGO_DEVELOPMENT": "1", **variables}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import config.settings as s; print(s.DEBUG, s.DATABASES['default']['OPTIONS']['prepare_threshold'])",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(("name", "value"), [("DJANGO_DEBUG", "ture"), ("POSTGRES_PREPARED_STATEMENTS", "yes please")])
def test_a_misspelt_switch_stops_the_settings_import(name: str, value: str) -> None:
    result = _import_settings(**{name: value})

    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"django.core.exceptions.ImproperlyConfigured: {name}={value!r} is not a boolean: "
        "use one of 1/true/yes/on or 0/false/no/off."
    )


def test_spelled_switches_reach_the_settings() -> None:
    result = _import_settings(DJANGO_DEBUG=" Yes ", POSTGRES_PREPARED_STATEMENTS="OFF")

    assert result.returncode == 0, result.stderr
    assert result.stdout == "True None\n"


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "On", " on\n"])
def test_true_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SOME_SWITCH", value)
    assert env_bool("SOME_SWITCH", False) is True


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "OFF", " off "])
def test_false_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SOME_SWITCH", value)
    assert env_bool("SOME_SWITCH", True) is False


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_means_the_default(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SOME_SWITCH", value)
    assert env_bool("SOME_SWITCH", True) is True
    assert env_bool("SOME_SWITCH", False) is False


def test_unset_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOME_SWITCH", raising=False)
    assert env_bool("SOME_SWITCH", True) is True


@pytest.mark.parametrize("value", ["ture", "yes please", "2", "y", "enabled"])
def test_anything_else_names_the_variable_and_value(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("SOME_SWITCH", value)
    with pytest.raises(ImproperlyConfigured) as raised:
        env_bool("SOME_SWITCH", False)
    assert str(raised.value) == (f"SOME_SWITCH={value!r} is not a boolean: use one of 1/true/yes/on or 0/false/no/off.")


@pytest.mark.parametrize(("name", "value"), [("LEASE_SECONDS", "90s"), ("CAPACITY_LOCAL_SHARE", "a quarter")])
def test_a_number_that_is_not_one_stops_the_settings_import(name: str, value: str) -> None:
    result = _import_settings(**{name: value})

    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"django.core.exceptions.ImproperlyConfigured: {name}={value!r} is not a number."
    )


@pytest.mark.parametrize(("value", "read"), [("", 7.5), ("  ", 7.5), ("0", 0.0), (" 2.25\n", 2.25), ("1e1", 10.0)])
def test_numbers_read_or_fall_back_to_the_default(monkeypatch: pytest.MonkeyPatch, value: str, read: float) -> None:
    monkeypatch.setenv("SOME_SECONDS", value)
    assert env_float("SOME_SECONDS", 7.5) == read


def test_whole_numbers_refuse_a_fraction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_COUNT", "2.5")
    with pytest.raises(ImproperlyConfigured, match=r"^SOME_COUNT='2.5' is not a whole number\.$"):
        env_int("SOME_COUNT", 3)
    monkeypatch.setenv("SOME_COUNT", " 4 ")
    assert env_int("SOME_COUNT", 3) == 4
