from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from accounts import views as account_views
from config import health, metrics

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("extraction.api.urls")),
    path("", include("extraction.web.urls")),
    path("api/v1/", include("delivery.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("", account_views.home, name="home"),
]

if settings.DEMO_ERP:
    urlpatterns.append(path("erp/", include("delivery.erp.urls")))

handler400 = "config.problems.handler400"
handler403 = "config.problems.handler403"
handler404 = "config.problems.handler404"
handler500 = "config.problems.handler500"
