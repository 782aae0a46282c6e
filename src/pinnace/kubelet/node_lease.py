"""The Lease of one node in kube-node-lease, as its kubelet's node lease controller keeps it
(pkg/kubelet/nodelease on staging/src/k8s.io/component-helpers/apimachinery/lease/controller.go).

Each sync (`renew`) writes the Lease as last written with its renewTime moved to now, without
reading it first; when that fails, it reads the Lease (creating it, owned by the Node, if there
is none) and renews that. A renewal is tried up to LEASE_UPDATE_RETRIES times in a row, on the
Lease read again after a conflict (someone else wrote it).

The simulated mode keeps the renewals of a healthy node in an account instead of writing each
(`write_renewals` off): the Lease once written stays, `renewed_before` says when it was last
renewed, and `write_last_renewal` writes that renewal when the Lease must show it (the node
stops renewing on time), `show_renewal` a renewal when someone reads the Lease.
docs/simulation.md, "What the simulated mode skips".
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import Client
from pinnace.client.retry import is_conflict
from pinnace.clock import format_micro_time, parse_time
from pinnace.kubelet.config import LEASE_UPDATE_RETRIES, NODE_LEASE_NAMESPACE, NodeConfig
from pinnace.kubelet.node_status import lease_object

LEASES = catalog.kind("coordination.k8s.io", "leases")


class NodeLease:
    """The Lease of the node of `config`, renewed through `client`."""

    # Slots: a simulated pool keeps one for every node.
    __slots__ = (
        "_renewals",
        "_unwritten",
        "_writing",
        "client",
        "config",
        "lease",
        "write_renewals",
    )

    def __init__(self, client: Client, config: NodeConfig) -> None:
        self.client = client
        self.config = config
        self.lease: Object | None = None
        """The Lease as last read or written."""
        self.write_renewals = True
        """Write each renewal to the Lease. Without (the simulated mode, while the node is
        healthy: its pool says), a Lease once written is renewed in the account only."""
        self._renewals = (-math.inf, -math.inf)
        """The last two renewals (the one before, the last), written or not."""
        self._unwritten = False
        self._writing = False
        """A renewal is being written: its own read of the Lease (after a conflict, the Lease
        gone) is no one's read to show a renewal to."""

    async def renew(self, node: Mapping[str, Any] | None) -> None:
        """The lease controller's sync. `node`: the Node as last heard of, the owner of a
        Lease created now."""
        now = self.client.clock.now()
        if not self.write_renewals and self.lease is not None:
            self.renewed_in_account(now)
            return
        if self.lease is not None:
            with contextlib.suppress(StatusError):
                await self._renew(self.lease, node)
                self._renewed_at(now, written=True)
                return
        lease, created = await self._ensure(node)
        if not created:
            await self._renew(lease, node)
        self._renewed_at(now, written=True)

    def renewed_in_account(self, at: float) -> None:
        """Renewed at `at`, not written."""
        self._renewed_at(at, written=False)

    def renewed_before(self, now: float) -> float:
        """When the lease was last renewed before `now` (-inf: never), written or not: what
        a node lifecycle controller's pass at `now` reads, as its pass comes before the
        heartbeats of the same instant."""
        before, last = self._renewals
        return last if last < now else before

    async def write_last_renewal(self, node: Mapping[str, Any] | None) -> None:
        """Write the last renewal to the Lease if it was kept in the account only: what the
        Lease of a kubelet that stops renewing on time (it stops, is cut off, slows) shows."""
        if self._unwritten and self.lease is not None:
            await self._renew(self.lease, node, self._renewals[1])
            self._unwritten = False

    async def show_renewal(self, at: float, node: Mapping[str, Any] | None) -> None:
        """Write the renewal at `at`, kept in the account, if the Lease shows an earlier one:
        someone reads it. A Lease gone meanwhile (the garbage collector deleted it: its owner, a
        Node of the same name before this one, is gone) is created again, as the kubelet's
        next renewal would."""
        if self.lease is None or self._writing:
            return
        shown = (self.lease.get("spec") or {}).get("renewTime")
        if shown is None or parse_time(shown) < at:
            await self._renew(self.lease, node, at)

    def _renewed_at(self, now: float, written: bool) -> None:
        if now != self._renewals[1]:
            self._renewals = (self._renewals[1], now)
        self._unwritten = not written

    async def _ensure(self, node: Mapping[str, Any] | None) -> tuple[Object, bool]:
        """The Lease as stored, or created now (True) when there is none."""
        client, name = self.client, self.config.name
        try:
            self.lease = await client.get(LEASES, NODE_LEASE_NAMESPACE, name)
            return self.lease, False
        except StatusError as e:
            if e.code != 404:
                raise
        node_uid = node["metadata"]["uid"] if node else ""
        wanted = lease_object(self.config, node_uid, format_micro_time(client.clock.now()))
        self.lease = await client.create(LEASES, NODE_LEASE_NAMESPACE, wanted)
        return self.lease, True

    async def _renew(
        self, lease: Object, node: Mapping[str, Any] | None, renewed_at: float | None = None
    ) -> None:
        """Write `lease` renewed at `renewed_at` (now by default), up to
        LEASE_UPDATE_RETRIES times, on the Lease read again after a conflict (or created again:
        an update of a Lease deleted meanwhile fails its uid precondition, a conflict)."""
        self._writing = True
        try:
            await self._try_renewing(lease, node, renewed_at)
        finally:
            self._writing = False

    async def _try_renewing(
        self, lease: Object, node: Mapping[str, Any] | None, renewed_at: float | None
    ) -> None:
        for attempt in range(LEASE_UPDATE_RETRIES):
            at = self.client.clock.now() if renewed_at is None else renewed_at
            renewed = {**lease, "spec": {**lease["spec"], "renewTime": format_micro_time(at)}}
            try:
                # The Lease as the API server gave it, with a canonical MicroTime: decoded.
                self.lease = await self.client.update_own(LEASES, renewed)
                return
            except StatusError as e:
                if attempt == LEASE_UPDATE_RETRIES - 1:
                    raise
                if is_conflict(e):
                    lease, _ = await self._ensure(node)
