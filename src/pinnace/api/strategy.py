"""Steps the registry strategies share when preparing an object for storage."""

from __future__ import annotations

import copy
from typing import Any


def keep_old(new: dict[str, Any], old: Any, key: str) -> None:
    """Make `new[key]` what `old` holds (absent stays absent): a write through one endpoint
    may not change what another endpoint owns, like status on a spec update."""
    if isinstance(old, dict) and key in old:
        new[key] = copy.deepcopy(old[key])
    else:
        new.pop(key, None)


def keep_status(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The update step of a kind whose main endpoint may not change its status."""
    keep_old(new, old, "status")


def keep_spec(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The status endpoint's step of a kind whose status writes may not change its spec."""
    keep_old(new, old, "spec")
