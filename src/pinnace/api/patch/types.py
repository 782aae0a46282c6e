"""The patch types, named by the content types of their PATCH requests, as
k8s.io/apimachinery/pkg/types/patch.go defines them for clients and the API server alike."""

from __future__ import annotations

from enum import StrEnum


class PatchType(StrEnum):
    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC_MERGE = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"
    """Server-side apply: the body is the applied configuration, in YAML (or JSON)."""
