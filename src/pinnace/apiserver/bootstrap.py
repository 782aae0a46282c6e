"""What every cluster has from its first start: the system namespaces, the built-in
priority classes, created when missing (a restart keeps what is there), the `kubernetes`
Service with its endpoints (`pinnace.apiserver.kubernetes_service`), and the default RBAC
roles and bindings, reconciled (`auth.policy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinnace.api import catalog
from pinnace.api.objects import clone
from pinnace.api.status import StatusError
from pinnace.apiserver import kubernetes_service
from pinnace.apiserver.admission.priority import SYSTEM_PRIORITY_CLASSES
from pinnace.apiserver.auth import policy

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


async def bootstrap(server: APIServer) -> None:
    namespaces = catalog.kind("", "namespaces")
    classes = catalog.kind("scheduling.k8s.io", "priorityclasses")
    wanted = [(namespaces, {"metadata": {"name": name}}) for name in SYSTEM_NAMESPACES]
    wanted += [(classes, clone(pc)) for pc in SYSTEM_PRIORITY_CLASSES.values()]
    for kind, obj in wanted:
        try:
            await server.create(kind, "", obj)
        except StatusError as e:
            if e.code != 409:
                raise
    await kubernetes_service.reconcile(server)
    await policy.ensure(server)
