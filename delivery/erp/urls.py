from __future__ import annotations

from django.urls import path

from delivery.erp import views

urlpatterns = [
    path("<slug:slug>/webhooks", views.receive_webhook, name="erp-webhook"),
]
