"""Prometheus endpoints that read the cluster through the client like any component
(docs/monitoring.md)."""

from pinnace.metrics.kube_state import KubeStateMetrics

__all__ = ["KubeStateMetrics"]
