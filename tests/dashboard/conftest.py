"""The dashboard's browser tests open pages in the HTML reports' browser."""

from tests.sim.conftest import browser

__all__ = ["browser"]
