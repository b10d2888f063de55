"""The shipped Grafana dashboard and Prometheus alert rules (config/monitoring/) name only metrics
that /metrics serves: every metric name their PromQL uses is looked up in a real scrape, taken
with a row in every family the database collectors read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

import pytest
import yaml
from django.test import Client

from tests.prometheus_scrape import give_every_family_a_row, metric_names, served_names
from tests.system import ROOT

MONITORING = ROOT / "config" / "monitoring"
DASHBOARD = MONITORING / "grafana-dashboard.json"
ALERT_RULES = MONITORING / "alert-rules.yml"

# The alerts the operations section promises (publish lag, oldest eligible age, the review SLO,
# delivery age, repeated 401/403), by name.
PROMISED_ALERTS = {
    "OutboxPublishLagHigh",
    "OldestEligibleJobWaiting",
    "ReviewQueueOverSLO",
    "WebhookDeliveryOverdue",
    "WebhookSignatureRefused",
}
# Counted only on a worker's provider call (tests/config/test_metrics.py drives one): declared
# in this scrape, without a sample.
COUNTED_BY_A_WORKER_ONLY = {"extraction_provider_rate_limited_total"}

# --- PromQL: the metric names an expression reads (tests/prometheus_scrape.py) ---------------


def test_the_promql_reading_finds_metrics_and_skips_functions_labels_and_keywords():
    expr = (
        'histogram_quantile(0.99, sum by (le, state) (rate(job_seconds_bucket{state=~"A|B", x="y{z}"}[$__rate_interval])))'
        " > on(pool) group_left queue_depth and bool max without (instance) (other:recorded_rule) offset 5m"
        ' or vector(1) unless absent(up{job="x"})'
    )
    assert metric_names(expr) == {"job_seconds_bucket", "queue_depth", "other:recorded_rule", "up"}


# --- the files -----------------------------------------------------------------------------------


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERT_RULES.read_text())["groups"] for rule in group["rules"]]


def dashboard_panels(panels: Iterable[dict]) -> Iterator[dict]:
    for panel in panels:
        if panel["type"] == "row":
            yield from dashboard_panels(panel.get("panels", []))
        else:
            yield panel


def dashboard_expressions() -> list[str]:
    return [target["expr"] for panel in dashboard_panels(dashboard()["panels"]) for target in panel["targets"]]


def test_every_dashboard_panel_queries_prometheus_through_the_datasource_variable():
    board = dashboard()
    assert [v["name"] for v in board["templating"]["list"] if v["type"] == "datasource"] == ["datasource"]
    panels = list(dashboard_panels(board["panels"]))
    assert panels
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        assert all(target["expr"].strip() for target in panel["targets"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]


def test_every_alert_is_a_complete_prometheus_rule_and_the_promised_ones_are_there():
    rules = alert_rules()
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names))
    assert PROMISED_ALERTS <= set(names)
    for rule in rules:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule["alert"]
        assert rule["labels"]["severity"] in ("page", "ticket"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule.get("for", "0s")), rule["alert"]
        assert metric_names(rule["expr"]), rule["alert"]


# --- against a real scrape -------------------------------------------------------------------------


# The scrape's broker figures come from the test vhost, its queues declared and empty.
pytestmark = pytest.mark.usefixtures("broker")


@pytest.fixture
def every_family_has_rows():
    """A job in review, one that ran to SUCCEEDED through the lifecycle, one accepted through
    the API; an endpoint, a due delivery and a 401 in its attempt ledger."""
    give_every_family_a_row()


@pytest.mark.django_db(transaction=True)
def test_every_metric_the_dashboard_and_the_alerts_name_is_served(every_family_has_rows):
    response = Client().get("/metrics")  # the project's URLconf and middleware; 127.0.0.1
    assert response.status_code == 200
    declared, sampled = served_names(response.content.decode())

    named = {
        name for expr in [*dashboard_expressions(), *(r["expr"] for r in alert_rules())] for name in metric_names(expr)
    }
    assert named, "no metric found in the dashboard or the rules"
    assert sorted(named - declared) == []
    assert named - sampled <= COUNTED_BY_A_WORKER_ONLY  # (a worker in this process may have counted it)
