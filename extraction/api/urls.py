from __future__ import annotations

from django.urls import path

from extraction.api import batches, operator_actions, views

# Mounted under api/v1/ (config/urls.py).
urlpatterns = [
    path("documents", views.DocumentCreateView.as_view(), name="document-list"),
    path("documents/<uuid:document_id>", views.DocumentDetailView.as_view(), name="document-detail"),
    path(
        "documents/<uuid:document_id>/pages/<int:page>.png",
        views.DocumentPageImageView.as_view(),
        name="document-page-image",
    ),
    path("extraction-jobs", views.ExtractionJobListCreateView.as_view(), name="extraction-job-list"),
    path("extraction-jobs/<uuid:job_id>", views.ExtractionJobDetailView.as_view(), name="extraction-job-detail"),
    path("extraction-batches", batches.BatchCreateView.as_view(), name="extraction-batch-list"),
    path("extraction-batches/<uuid:batch_id>", batches.BatchDetailView.as_view(), name="extraction-batch-detail"),
    path("extraction-jobs/rerun", operator_actions.JobRerunView.as_view(), name="extraction-jobs-rerun"),
    path("extraction-jobs/cancel", operator_actions.JobCancelView.as_view(), name="extraction-jobs-cancel"),
    path("operator-actions", operator_actions.OperatorActionListView.as_view(), name="operator-action-list"),
    path(
        "operator-actions/<uuid:action_id>",
        operator_actions.OperatorActionDetailView.as_view(),
        name="operator-action-detail",
    ),
]
