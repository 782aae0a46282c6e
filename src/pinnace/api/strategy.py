"""Steps the registry strategies share when preparing an object for storage."""

from __future__ import annotations

from typing import Any


def keep_old(new: dict[str, Any], old: Any, key: str) -> None:
    """Make `new[key]` what `old` holds (absent stays absent): a write through one endpoint
    may not change what another endpoint owns, like status on a spec update.

    The kept part is the stored object's own, shared rather than copied, as a pod's
    (`prepare_pod_for_update`): stored objects are read-only (pinnace.store.interface), and
    nothing on the update path changes a kept part in place after the strategy step. Mutating
    admission changes only pods (and a CertificateSigningRequest's conditions, which no
    strategy keeps this way); `drop_disabled` drops a template's containers' resizePolicy only
    where the stored template has none (decoding leaves out an empty one), and no other kind
    drops any field; validation and the store only read it (the store copies the metadata)."""
    if isinstance(old, dict) and key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)


def keep_status(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The update step of a kind whose main endpoint may not change its status."""
    keep_old(new, old, "status")


def keep_spec(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The status endpoint's step of a kind whose status writes may not change its spec."""
    keep_old(new, old, "spec")
