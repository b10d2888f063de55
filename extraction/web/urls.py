"""URLs of the browser UI and its read API (included from config/urls.py)."""

from __future__ import annotations

from django.urls import path

from extraction.web import views as web

urlpatterns = [
    path(
        "api/v1/extraction-jobs/<uuid:job_id>/document-text",
        web.JobDocumentTextView.as_view(),
        name="extraction-job-document-text",
    ),
    path("api/v1/notification-tickets", web.NotificationTicketView.as_view(), name="notification-ticket"),
    path("jobs/<uuid:job_id>/", web.job_page, name="job-page"),
    path("jobs/batches/<uuid:batch_id>/", web.batch_page, name="batch-page"),
]
