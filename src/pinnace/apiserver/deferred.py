"""Writes the simulated mode keeps in an account instead of making them (a healthy node's lease
renewals, `pinnace.kubelet.pool`), made when someone reads what they would have changed: the
API server asks for them before a get or a list, so what a read shows is what it would show
had every write been made (a node's Lease renewed seconds ago, not when it was last written).
A watch is not served so: it shows the writes made."""

from __future__ import annotations

from typing import Protocol

from pinnace.api.kind import Kind


class DeferredWrites(Protocol):
    async def before_read(self, kind: Kind, namespace: str, name: str) -> None:
        """Make the writes kept back that a read of `kind` would show: of the object `name`
        in `namespace`, or of every one ("") in the namespace (in every namespace: "")."""
        ...
