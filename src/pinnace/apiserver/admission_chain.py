"""The admission plugins kube-apiserver v1.32 enables by default that matter to Pinnace, in
their order, with what each needs looked up from the store.

Mutating (before validation): NamespaceLifecycle, LimitRanger, ServiceAccount (where the
ServiceAccount controller runs to create the accounts it requires: a cluster's API server),
Priority, DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection,
RuntimeClass, DefaultIngressClass. Validating (after validation, before storage):
PodSecurity (`pod_security`, whose warnings the write returns; v1.32 runs it after
LimitRanger's check), LimitRanger's, Priority's, PersistentVolumeClaimResize's and
RuntimeClass's checks, then ResourceQuota, which charges a create's usage to the quotas' status
before the object is stored. Deletes (and pods that finish) free usage by recalculating the
namespace's quotas afterwards, which is the resource quota controller's job in Kubernetes; the
`QuotaGate` keeps that recount from undoing a charge whose object is still being stored.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from random import Random
from typing import TYPE_CHECKING, Any

from pinnace.api import catalog, status
from pinnace.api.autoscaling.vpa_policy import Owner
from pinnace.api.core.persistentvolume import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from pinnace.api.core.serviceaccount import DEFAULT_SERVICE_ACCOUNT
from pinnace.api.kind import Kind
from pinnace.api.names import random_suffix
from pinnace.api.objects import Object
from pinnace.apiserver.admission import (
    certificates,
    default_tolerations,
    ingress_class,
    limit_ranger,
    namespace_lifecycle,
    pod_security,
    priority,
    quota_usage,
    resource_quota,
    runtime_class,
    service_account,
    storage,
    vpa,
)
from pinnace.apiserver.admission.errors import object_name
from pinnace.apiserver.admission.pod_security_levels import (
    Configuration as PodSecurityConfiguration,
)
from pinnace.apiserver.admission_objects import AdmissionObjects
from pinnace.apiserver.auth import escalation
from pinnace.apiserver.auth import node as node_restriction
from pinnace.apiserver.auth.user import Requester, requester
from pinnace.apiserver.keys import kind_prefix, list_prefix, object_key
from pinnace.apiserver.quota_gate import QuotaGate
from pinnace.clock import Randomness
from pinnace.store import ConflictError, KeyNotFoundError

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

_QUOTA_RETRIES = 16
_VALIDATED: dict[tuple[str, str], frozenset[str]] = {
    ("", "Pod"): frozenset({"CREATE"}),
    ("", "PersistentVolumeClaim"): frozenset({"CREATE", "UPDATE"}),
    ("scheduling.k8s.io", "PriorityClass"): frozenset({"CREATE", "UPDATE"}),
    (certificates.GROUP, "CertificateSigningRequest"): frozenset({"CREATE", "UPDATE"}),
}
"""The writes the validating plugins check, by (group, kind): LimitRanger and RuntimeClass a
pod's create, LimitRanger a claim's writes (and PersistentVolumeClaimResize its updates),
Priority a PriorityClass's, and the certificate plugins a CertificateSigningRequest's."""


def _requester_key(acting: Requester | None) -> Hashable:
    if acting is None:
        return None
    user = acting.user
    return (user.name, user.uid, user.groups, tuple(user.extra.items()), acting.namespace)


def _is(kind: Kind, group: str, name: str) -> bool:
    return kind.group == group and kind.kind == name


def _retry_interval(random: Random) -> float:
    """Seconds between the lookups of a pod's `default` ServiceAccount: 100-200 ms."""
    return (100 + random.randrange(100)) / 1000


def _operation(old: Object | None) -> str:
    return "CREATE" if old is None else "UPDATE"


NAMESPACES = catalog.kind("", "namespaces")
PODS = catalog.kind("", "pods")
INGRESS_CLASSES = catalog.kind("networking.k8s.io", "ingressclasses")
LIMIT_RANGES = catalog.kind("", "limitranges")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
RESOURCE_QUOTAS = catalog.kind("", "resourcequotas")
RUNTIME_CLASSES = catalog.kind("node.k8s.io", "runtimeclasses")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
STORAGE_CLASSES = catalog.kind("storage.k8s.io", "storageclasses")
VPAS = catalog.kind("autoscaling.k8s.io", "verticalpodautoscalers")


class AdmissionChain:
    def __init__(self, server: APIServer, service_accounts: Randomness | None = None) -> None:
        """`service_accounts`: run the ServiceAccount plugin, drawing its volume names and
        retry intervals from this stream."""
        self._server = server
        self._quota_gate = QuotaGate()
        self._objects = AdmissionObjects(
            server.store,
            (
                NAMESPACES,
                LIMIT_RANGES,
                PRIORITY_CLASSES,
                RESOURCE_QUOTAS,
                RUNTIME_CLASSES,
                SERVICE_ACCOUNTS,
                STORAGE_CLASSES,
                VPAS,
                INGRESS_CLASSES,
            ),
            # Of what admission reads, only ResourceQuota's charge reads quotas, and it runs
            # for every create: a charge written to a quota leaves the pods' `generation`.
            uncounted=(RESOURCE_QUOTAS,),
        )
        self._service_accounts = None if service_accounts is None else service_accounts.random
        self._pod_security_configuration = PodSecurityConfiguration()
        self._configured = 0
        """How many times PodSecurity's configuration was set."""
        self._pod_security_policies = pod_security.NamespacePolicies()

    @property
    def pod_security_configuration(self) -> PodSecurityConfiguration:
        """PodSecurity's defaults and exemptions (kube-apiserver's
        --admission-control-config-file)."""
        return self._pod_security_configuration

    @pod_security_configuration.setter
    def pod_security_configuration(self, configuration: PodSecurityConfiguration) -> None:
        self._pod_security_configuration = configuration
        self._configured += 1

    async def _stored(self) -> AdmissionObjects:
        """What the plugins look up, as stored now."""
        await self._objects.load()
        return self._objects

    async def _list(self, kind: Kind, namespace: str) -> list[Object]:
        return (await self._server.store.list(list_prefix(kind, namespace))).items

    async def _runtime_class(self, pod: Object) -> Object | None:
        name = runtime_class.requested_class(pod)
        return (await self._stored()).get(RUNTIME_CLASSES, "", name) if name else None

    async def admit(
        self, operation: str, kind: Kind, obj: Object, old: Object | None, subresource: str = ""
    ) -> None:
        node_restriction.admit(operation, kind, obj, old, subresource)
        if not subresource and escalation.guards(kind):
            await escalation.check(self._server.authorizer, kind, obj, old)
        m = obj.get("metadata") or {}
        namespace = m.get("namespace", "")
        stored = self._objects if self._objects.loaded else await self._stored()
        if kind.namespaced and operation == "CREATE":
            namespace_lifecycle.check(
                operation,
                kind.plural,
                namespace,
                object_name(obj),
                stored.get(NAMESPACES, "", namespace),
                group=kind.group,
            )
        if _is(kind, certificates.GROUP, "CertificateSigningRequest"):
            if operation == "CREATE":
                certificates.set_requester(obj)
            elif subresource and old is not None:
                certificates.stamp_conditions(obj, old, self._server.clock.now_rfc3339())
        if operation == "CREATE" and not subresource:
            self._admit_storage(kind, obj, stored)
            if _is(kind, "networking.k8s.io", "Ingress"):
                ingress_class.admit_ingress(obj, stored.list(INGRESS_CLASSES, ""))
        if not _is(kind, "", "Pod") or subresource:
            return
        if operation == "CREATE":
            limit_ranger.mutate("pods", obj, stored.list(LIMIT_RANGES, namespace))
            await self._admit_service_account(obj, namespace)
        priority.admit_pod(obj, stored.named(PRIORITY_CLASSES, ""), operation, old)
        default_tolerations.admit_pod(obj)
        if operation == "CREATE":
            runtime_class.admit_pod(obj, await self._runtime_class(obj))
            await vpa.admit_pod(obj, stored.list(VPAS, namespace), self._workload)

    @staticmethod
    def _admit_storage(kind: Kind, obj: Object, stored: AdmissionObjects) -> None:
        """DefaultStorageClass, then StorageObjectInUseProtection."""
        if _is(kind, "", "PersistentVolumeClaim"):
            storage.admit_claim(obj, stored.list(STORAGE_CLASSES, ""))
            storage.add_finalizer(obj, PVC_PROTECTION_FINALIZER)
        elif _is(kind, "", "PersistentVolume"):
            storage.add_finalizer(obj, PV_PROTECTION_FINALIZER)

    async def _workload(
        self, api_version: str, kind: str, namespace: str, name: str
    ) -> Owner | None:
        """The stored controller a controller reference names, of any kind the server
        serves."""
        group = api_version.split("/", 1)[0] if "/" in api_version else ""
        served = self._server.kinds.by_kind(group, kind)
        if served is None:
            return None
        try:
            obj = await self._server.store.get(object_key(served, namespace, name))
        except KeyNotFoundError:
            return None
        return Owner(obj, "scale" in served.subresources)

    async def _admit_service_account(self, pod: Object, namespace: str) -> None:
        random = self._service_accounts
        if random is None:
            return
        name = service_account.requested_account(pod)
        account = await self._service_account(random, namespace, name) if name else None
        service_account.admit_pod(pod, account, random_suffix(random))

    def token_volume_suffix(self, account: str) -> str:
        """What the ServiceAccount plugin draws for a pod of `account` ("" for none) that
        finds it at once: its lookup's retry interval, then its token volume's suffix (""
        when the plugin does not run). For a create whose admission is remembered
        (`create_memo`), so each pod's draws are those of its own admission."""
        random = self._service_accounts
        if random is None:
            return ""
        if account:
            _retry_interval(random)
        return random_suffix(random)

    async def _service_account(self, random: Random, namespace: str, name: str) -> Object | None:
        """The account as stored; `default`, which the ServiceAccount controller creates
        just after its namespace, is looked for again a few times 100-200 ms apart."""
        attempts = 1
        if name == DEFAULT_SERVICE_ACCOUNT:
            attempts = service_account.LOOKUP_ATTEMPTS_FOR_DEFAULT
        interval = _retry_interval(random)
        for attempt in range(attempts):
            if attempt:
                await self._server.clock.sleep(interval)
            found = (await self._stored()).get(SERVICE_ACCOUNTS, namespace, name)
            if found is not None:
                return found
        return None

    def generation(self, namespace: str) -> tuple[Hashable, ...] | None:
        """What a pod's admission in `namespace` reads beyond the pod, as it is now (but the
        quotas, which only the charge that follows it reads): a change of the objects it reads
        (`AdmissionObjects.changes`), PodSecurity's configuration or the requester gives
        another. None when its answer may depend on more than that (the
        objects not loaded yet; a VerticalPodAutoscaler in the namespace, which reads the
        pod's controllers)."""
        stored = self._objects
        if not stored.loaded or stored.holds(VPAS, namespace):
            return None
        acting = requester()
        return (stored.changes, self._configured, _requester_key(acting))

    async def pod_security(
        self, kind: Kind, obj: Object, old: Object | None, subresource: str = ""
    ) -> list[str]:
        """PodSecurity's validation of a write: its warnings, or its 403 (a pod the enforce
        policy forbids) or 422 (a namespace's labels that do not parse). Only for the writes
        `pod_security_applies` to."""
        config = self.pod_security_configuration
        if _is(kind, "", "Namespace"):
            warnings, enforce = pod_security.validate_namespace(config, obj, old)
            if enforce is None:
                return warnings
            name = obj["metadata"]["name"]
            pods = await self._list(PODS, name)
            return pod_security.existing_pods_warnings(config, name, enforce, pods)
        stored = self._objects if self._objects.loaded else await self._stored()
        found = stored.get(NAMESPACES, "", (obj.get("metadata") or {}).get("namespace", ""))
        acting = requester()
        username = "" if acting is None else acting.user.name
        policies = self._pod_security_policies
        if _is(kind, "", "Pod"):
            return pod_security.validate_pod(
                config, username, found, obj, old, subresource, policies
            )
        return pod_security.validate_pod_controller(
            config, username, found, kind.group, kind.kind, obj, policies
        )

    @staticmethod
    def pod_security_applies(kind: Kind, subresource: str = "") -> bool:
        """Whether PodSecurity looks at writes of this kind and subresource (pods, their
        controllers, namespaces; no subresource but a pod's it does not ignore): the others
        skip the call."""
        return pod_security.applies_to(kind.group, kind.kind, subresource)

    @staticmethod
    def validates(operation: str, kind: Kind) -> bool:
        """Whether `validate` checks anything of such a write (most kinds have no validating
        plugin: their writes skip the call)."""
        return operation in _VALIDATED.get((kind.group, kind.kind), ())

    async def validate(
        self,
        operation: str,
        kind: Kind,
        obj: Object,
        old: Object | None = None,
        subresource: str = "",
    ) -> None:
        """The validating checks before ResourceQuota's charge (`quota_charged`); an update
        gives the stored object as `old`. Only the writes `_VALIDATED` names are checked."""
        if not self.validates(operation, kind):
            return
        if _is(kind, certificates.GROUP, "CertificateSigningRequest"):
            authorizer = self._server.authorizer
            await certificates.validate(authorizer, operation, subresource, obj, old)
            return
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        stored = await self._stored()
        if _is(kind, "", "Pod"):
            limit_ranger.validate("pods", obj, stored.list(LIMIT_RANGES, namespace))
            runtime_class.validate_pod(obj, await self._runtime_class(obj))
        elif _is(kind, "", "PersistentVolumeClaim"):
            if not subresource and not (
                old and (old.get("metadata") or {}).get("deletionTimestamp")
            ):
                limit_ranger.validate(
                    "persistentvolumeclaims", obj, stored.list(LIMIT_RANGES, namespace)
                )
            if not subresource and old is not None:
                refused = storage.validate_claim_resize(obj, old, stored.named(STORAGE_CLASSES, ""))
                if refused:
                    raise status.forbidden("persistentvolumeclaims", object_name(obj), refused)
        else:
            existing = stored.named(PRIORITY_CLASSES, "")
            priority.validate_priority_class(obj, existing, operation)

    def quota_charged(
        self,
        kind: Kind,
        obj: Object,
        dry_run: bool = False,
        old: Object | None = None,
        subresource: str = "",
    ) -> AbstractAsyncContextManager[None] | None:
        """ResourceQuota's admission of a create, or of an update of `old` that v1.32 charges
        what it adds (a pod's resize, a Service's or claim's write: `charges_update`): its
        usage is charged to the namespace's quotas (403 when one cannot take it), then the
        block stores the object. A charge whose object was not stored is given back at once.
        A dry run is refused as its write would be, and charges nothing. None when there is
        nothing to charge (most writes): the caller stores without a block."""
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        if old is not None and not resource_quota.charges_update(
            kind.plural, kind.group, subresource
        ):
            return None
        if not kind.namespaced or (kind.group, kind.plural) in resource_quota.IGNORED_RESOURCES:
            return None
        if self._no_quota_at_once(namespace):
            return None
        if dry_run:
            return self._checked(kind, obj, old, namespace)
        return self._charged(kind, obj, old, namespace)

    @asynccontextmanager
    async def _checked(
        self, kind: Kind, obj: Object, old: Object | None, namespace: str
    ) -> AsyncIterator[None]:
        """checkQuotas on a dry run: its refusal is returned, its charge never written."""
        quotas = (await self._stored()).list(RESOURCE_QUOTAS, namespace)
        resource_quota.admit(kind.plural, kind.group, _operation(old), obj, old, quotas)
        yield

    def _no_quota_at_once(self, namespace: str) -> bool:
        """What the namespace's turn would find at once, without waiting for it: no quota
        to charge or recount (so taking the turn would change nothing)."""
        return (
            self._objects.loaded
            and self._quota_gate.idle(namespace)
            and not self._objects.holds(RESOURCE_QUOTAS, namespace)
        )

    @asynccontextmanager
    async def _charged(
        self, kind: Kind, obj: Object, old: Object | None, namespace: str
    ) -> AsyncIterator[None]:
        give_back = False
        charge = partial(self._charge, kind, obj, old)
        try:
            async with self._quota_gate.charge(namespace, charge) as charged:
                give_back = charged
                yield
                give_back = False
        finally:
            if give_back:
                await self._recount(namespace)

    async def _charge(self, kind: Kind, obj: Object, old: Object | None) -> bool:
        """Whether usage was charged; retried when a quota changes under the evaluation."""
        namespace = (obj.get("metadata") or {}).get("namespace", "")
        for _ in range(_QUOTA_RETRIES):
            quotas = (await self._stored()).list(RESOURCE_QUOTAS, namespace)
            if not quotas:
                return False
            changed = resource_quota.admit(
                kind.plural, kind.group, _operation(old), obj, old, quotas
            )
            try:
                for quota in changed:
                    await self._server.store.update(
                        object_key(RESOURCE_QUOTAS, namespace, quota["metadata"]["name"]),
                        quota,
                        int(quota["metadata"]["resourceVersion"]),
                    )
                return bool(changed)
            except (ConflictError, KeyNotFoundError):
                continue  # a quota was changed or deleted meanwhile: evaluate again
        raise status.conflict(
            "resourcequotas", "", "too many concurrent writes to the namespace's quotas"
        )

    @staticmethod
    def check_named_delete(kind: Kind, name: str) -> None:
        """What refuses a delete by name before the object is read (not a collection's)."""
        if _is(kind, "scheduling.k8s.io", "PriorityClass"):
            priority.refuse_system_class_delete(name)

    async def check_delete(self, kind: Kind, obj: Object) -> None:
        node_restriction.admit("DELETE", kind, obj, obj, "")
        if _is(kind, "", "Namespace"):
            namespace_lifecycle.check("DELETE", "namespaces", "", obj["metadata"]["name"], obj)

    async def after_write(self, operation: str, kind: Kind, namespace: str) -> None:
        """Recalculate the namespace's quotas after a delete, a pod update (a pod that
        finished no longer counts), a Service's update (its type may change what it counts
        for), or a quota's create or update: the resource quota controller's work, done at
        once."""
        if self.recounts_after(operation, kind, namespace):
            await self._recount(namespace)

    def recounts_after(self, operation: str, kind: Kind, namespace: str) -> bool:
        """Whether `after_write` has anything to do: a namespace with no quota has nothing to
        recount (what most writes find, and skip the call for)."""
        if not kind.namespaced or not namespace:
            return False
        is_quota = _is(kind, "", "ResourceQuota")
        if operation == "CREATE" and not is_quota:
            return False
        if operation == "UPDATE" and not (
            is_quota or _is(kind, "", "Pod") or _is(kind, "", "Service")
        ):
            return False
        return not self._no_quota_at_once(namespace)

    async def resync(self) -> float:
        """Recount every namespace's quotas, as the resource quota controller's full resync
        does; returns when a recount could next change a quota without a write (a pod being
        deleted stops counting once its grace has run out), math.inf for never."""
        now = self._server.clock.now()
        quotas = (await self._server.store.list(kind_prefix(RESOURCE_QUOTAS))).items
        next_change = math.inf
        for namespace in sorted({q["metadata"]["namespace"] for q in quotas}):
            await self._recount(namespace)
            for pod in await self._list(PODS, namespace):
                ends = quota_usage.charge_ends(pod, now)
                if ends is not None:
                    next_change = min(next_change, math.nextafter(ends, math.inf))
        return next_change

    async def _recount(self, namespace: str) -> None:
        if self._no_quota_at_once(namespace):
            return  # every pod update of a namespace without quotas gets here
        async with self._quota_gate.recount(namespace):
            for quota in (await self._stored()).list(RESOURCE_QUOTAS, namespace):
                await self._recalculate(RESOURCE_QUOTAS, namespace, quota)

    async def _recalculate(self, quota_kind: Kind, namespace: str, quota: Object) -> None:
        for _ in range(_QUOTA_RETRIES):
            objects: dict[str, list[Any]] = {}
            for resource in resource_quota.tracked_resources(quota):
                group, _, plural = resource.rpartition("/")
                kind = self._server.kinds.by_resource(group, plural)
                if kind is not None:  # a custom resource's too (`count/<plural>.<group>`)
                    objects[resource] = await self._list(kind, namespace)
            updated = resource_quota.recalculate(quota, objects, now=self._server.clock.now())
            if updated == quota:
                return
            try:
                await self._server.store.update(
                    object_key(quota_kind, namespace, quota["metadata"]["name"]),
                    updated,
                    int(quota["metadata"]["resourceVersion"]),
                )
                return
            except ConflictError:
                try:
                    quota = await self._server.store.get(
                        object_key(quota_kind, namespace, quota["metadata"]["name"])
                    )
                except KeyNotFoundError:
                    return
            except KeyNotFoundError:
                return
