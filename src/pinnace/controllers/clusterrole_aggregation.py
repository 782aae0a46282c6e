"""The cluster role aggregation controller: a ClusterRole with an aggregationRule gets the rules
of every other ClusterRole its selectors match, as kube-controller-manager's (v1.32,
pkg/controller/clusterroleaggregation): for each selector in turn, the roles it matches in
name order, each rule once.
This is what fills admin, edit and view from system:aggregate-to-* and from any role labelled
`rbac.authorization.k8s.io/aggregate-to-<role>: "true"`.
"""

from __future__ import annotations

from typing import Any

from pinnace.api.labels import selector_from_dict
from pinnace.api.objects import Object
from pinnace.api.rbac.kinds import CLUSTER_ROLE
from pinnace.client import Client, Informer, InformerFactory
from pinnace.controllers.controller_utils import WorkQueue


def aggregated_rules(role: Object, roles: list[Object]) -> list[dict[str, Any]]:
    """The rules `role`'s aggregationRule gathers from `roles`: selector by selector, the
    roles each matches in name order."""
    name = role["metadata"]["name"]
    rules: list[dict[str, Any]] = []
    for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
        compiled = selector_from_dict(selector)
        matched = [
            other
            for other in roles
            if other["metadata"]["name"] != name
            and compiled.matches(other["metadata"].get("labels") or {})
        ]
        for other in sorted(matched, key=lambda r: r["metadata"]["name"]):
            for rule in other.get("rules") or ():
                if rule not in rules:
                    rules.append(rule)
    return rules


class ClusterRoleAggregationController:
    def __init__(self, client: Client, informers: InformerFactory) -> None:
        self._client = client
        self._queue = WorkQueue(client.clock)
        self._roles: Informer = informers.informer(CLUSTER_ROLE)
        self._roles.add_event_handler(
            on_add=self._enqueue_aggregated,
            on_update=lambda old, new: self._enqueue_aggregated(new),
            on_delete=self._enqueue_aggregated,
        )

    async def run(self) -> None:
        await self._roles.wait_for_sync()
        await self._queue.run(self.sync)

    def _enqueue_aggregated(self, _changed: Object) -> None:
        """Any cluster role's change may change what any aggregated one gathers."""
        for role in self._roles.list():
            if role.get("aggregationRule") is not None:
                self._queue.add(role["metadata"]["name"])

    async def sync(self, name: str) -> None:
        role = self._roles.get("", name)
        if role is None or role.get("aggregationRule") is None:
            return
        rules = aggregated_rules(role, self._roles.list())
        if rules == (role.get("rules") or []):
            return
        await self._client.update(CLUSTER_ROLE, {**role, "rules": rules})
