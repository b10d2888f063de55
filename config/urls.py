from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts import views as account_views
from config import health, metrics
from delivery import redelivery
from extraction.api import operator_actions
from extraction.api import views as extraction_views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/documents", extraction_views.DocumentCreateView.as_view(), name="document-list"),
    path("api/v1/documents/<uuid:document_id>", extraction_views.DocumentDetailView.as_view(), name="document-detail"),
    path("api/v1/extraction-jobs", extraction_views.ExtractionJobListCreateView.as_view(), name="extraction-job-list"),
    path(
        "api/v1/extraction-jobs/<uuid:job_id>",
        extraction_views.ExtractionJobDetailView.as_view(),
        name="extraction-job-detail",
    ),
    path("api/v1/extraction-jobs/rerun", operator_actions.JobRerunView.as_view(), name="extraction-jobs-rerun"),
    path("api/v1/extraction-jobs/cancel", operator_actions.JobCancelView.as_view(), name="extraction-jobs-cancel"),
    path(
        "api/v1/webhook-deliveries/redeliver",
        redelivery.WebhookRedeliverView.as_view(),
        name="webhook-deliveries-redeliver",
    ),
    path("api/v1/operator-actions", operator_actions.OperatorActionListView.as_view(), name="operator-action-list"),
    path(
        "api/v1/operator-actions/<uuid:action_id>",
        operator_actions.OperatorActionDetailView.as_view(),
        name="operator-action-detail",
    ),
    path("", include("extraction.web.urls")),
    path("api/v1/", include("delivery.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", account_views.home, name="home"),
]

if settings.DEMO_ERP:
    urlpatterns.append(path("erp/", include("delivery.erp.urls")))
if settings.BENCH_FLOOR_VIEWS:
    urlpatterns.append(path("bench/floor/", include("bench.floor_urls")))

handler400 = "config.problems.handler400"
handler403 = "config.problems.handler403"
handler404 = "config.problems.handler404"
handler500 = "config.problems.handler500"
