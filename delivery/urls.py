from __future__ import annotations

from django.urls import path

from delivery import redelivery, views

# Mounted under api/v1/ (config/urls.py).
urlpatterns = [
    path("webhook-endpoints", views.WebhookEndpointListCreateView.as_view(), name="webhook-endpoint-list"),
    path(
        "webhook-endpoints/<uuid:endpoint_id>",
        views.WebhookEndpointDetailView.as_view(),
        name="webhook-endpoint-detail",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/rotate-secret",
        views.WebhookEndpointRotateSecretView.as_view(),
        name="webhook-endpoint-rotate-secret",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/verify",
        views.WebhookEndpointVerifyView.as_view(),
        name="webhook-endpoint-verify",
    ),
    path(
        "webhook-endpoints/<uuid:endpoint_id>/deliveries",
        views.WebhookEndpointDeliveriesView.as_view(),
        name="webhook-endpoint-deliveries",
    ),
    path(
        "webhook-deliveries/redeliver",
        redelivery.WebhookRedeliverView.as_view(),
        name="webhook-deliveries-redeliver",
    ),
]
