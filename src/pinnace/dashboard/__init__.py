"""The web dashboard `pinnace up` serves at `/dashboard/` (docs/monitoring.md)."""

from pinnace.dashboard.server import DASHBOARD_PATH, Dashboard

__all__ = ["DASHBOARD_PATH", "Dashboard"]
