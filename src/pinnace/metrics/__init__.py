"""Prometheus endpoints that read the cluster through the client like any component, and the
cluster's usage history (docs/monitoring.md)."""

from pinnace.metrics.history import UsageHistory
from pinnace.metrics.kube_state import KubeStateMetrics
from pinnace.metrics.recorder import HistoryRecorder

__all__ = ["HistoryRecorder", "KubeStateMetrics", "UsageHistory"]
