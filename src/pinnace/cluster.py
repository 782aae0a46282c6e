"""The one assembly of a cluster: the API server and every component that runs against it.

`ControlPlane(store, clock, options)` builds what a kubeadm cluster runs (kube-apiserver with
its compaction and Event expiry, kube-scheduler, kube-controller-manager's controllers and the
nodes' kubelets) and starts and stops them in dependency order. `pinnace up` serves it over
HTTP on the real loop; the benchmarks and the tests run it in-process, on the real or the
virtual loop. Adding a component means adding it here, and nowhere else.
"""

from __future__ import annotations

import asyncio
import copy
import gc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, urlencode

from prometheus_client import CollectorRegistry

from pinnace.api import catalog
from pinnace.api.authorization.reviews import SUBJECT_ACCESS_REVIEW
from pinnace.api.core.componentstatus import ComponentHealth
from pinnace.api.core.event import EVENT
from pinnace.api.features import FeatureGates
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, Remembered
from pinnace.api.status import StatusError
from pinnace.api.storage.storageclass import IS_DEFAULT_CLASS, STORAGE_CLASS
from pinnace.apiserver.admission.pod_security_levels import (
    Configuration as PodSecurityConfiguration,
)
from pinnace.apiserver.agent_summaries import AgentSummaries
from pinnace.apiserver.auth.reviews import answer
from pinnace.apiserver.auth.security import Security
from pinnace.apiserver.auth.tokens import DEFAULT_ISSUER, service_account_issuer
from pinnace.apiserver.auth.user import ANONYMOUS_USER
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.component_checks import (
    CONTROLLER_MANAGER_PORT,
    SCHEDULER_PORT,
    healthy,
    probe_healthz,
)
from pinnace.apiserver.custom_metrics import LocalMetricsClient
from pinnace.apiserver.http.app import APIApp, PodExplainer
from pinnace.apiserver.keys import kind_prefix
from pinnace.apiserver.kubelets import Relayed
from pinnace.apiserver.metrics import list_pod_metrics
from pinnace.apiserver.quota_resync import DEFAULT_SYNC_PERIOD as DEFAULT_QUOTA_SYNC_PERIOD
from pinnace.apiserver.quota_resync import QuotaResync
from pinnace.apiserver.server import APIServer
from pinnace.apiserver.service_allocation import ServiceNetwork
from pinnace.apiserver.storage_metrics import StorageObjects
from pinnace.autoscaler.autoscaler import ClusterAutoscaler
from pinnace.autoscaler.metrics import AutoscalerMetrics
from pinnace.autoscaler.options import AutoscalerOptions
from pinnace.client import Client, Informer, LocalClient
from pinnace.client.custom_metrics import CustomMetricsClient
from pinnace.client.events_v1 import DEFAULT_HOSTNAME
from pinnace.client.kubelet import FAULTS_PATH, KubeletClient
from pinnace.client.mapper import KindMapper, RegistryMapper
from pinnace.clock import Clock, Randomness
from pinnace.clock.component import Component
from pinnace.controllers.certificates import CertificateControllers
from pinnace.controllers.controller_utils import pods_on_nodes
from pinnace.controllers.csr_approving import AccessReview, reviewed_by
from pinnace.controllers.csr_signing import ClusterSigning
from pinnace.controllers.customresourcedefinitions import CustomResourceDefinitions
from pinnace.controllers.hpa import PodMetricsLister
from pinnace.controllers.namespace import NamespaceController
from pinnace.controllers.node_lifecycle import (
    NodeHeartbeats,
    NodeLifecycleConfig,
    NodeLifecycleController,
)
from pinnace.controllers.rootcacertpublisher import RootCACertPublisher, self_signed_ca
from pinnace.controllers.serviceaccount_tokens import TokensController
from pinnace.controllers.serviceaccounts import ServiceAccountsController
from pinnace.controllers.taint_eviction import TaintEvictionController
from pinnace.controllers.vpa import (
    PROMETHEUS,
    PodHistory,
    VerticalPodAutoscaling,
    VPAOptions,
)
from pinnace.controllers.workloads import WorkloadControllers, WorkloadOptions
from pinnace.dashboard import Dashboard
from pinnace.kubelet import NodeAgentPool, NodeConfig
from pinnace.kubelet.config import AGENT_LABEL, HOUSEKEEPING_INTERVAL
from pinnace.kubelet.faults import inject
from pinnace.metrics import HistoryRecorder, KubeStateMetrics, UsageHistory
from pinnace.metrics.custom import SimulatedMetricsAdapter
from pinnace.scheduler.adapter import SchedulerService
from pinnace.scheduler.config import SchedulerConfiguration
from pinnace.scheduler.explain import cluster_explainer
from pinnace.scheduler.loop import Placer
from pinnace.store import Compactor, Store
from pinnace.store.compactor import DEFAULT_INTERVAL as DEFAULT_COMPACTION_INTERVAL
from pinnace.store.expiry import DEFAULT_EVENT_TTL, Expiry

KUBE_STATE_PATH = "/metrics/cluster"
GC_THRESHOLD = (20_000, 250, 100)
"""Stored objects are acyclic JSON, so Python's cyclic collector finds almost nothing; its
default thresholds would make it walk every stored object over and over. Young collections
stay small, though: each stops the event loop (at 100,000 objects, 30-90 ms under load, which
set the watch delivery p99), while older ones come as rarely as before (every 5M objects)."""


def settle_garbage_collection() -> None:
    """Tune the process's cyclic collector for a cluster that runs long: what is loaded so far
    lives as long as the process, so it is never scanned again, and collections are rarer."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def _agent_process_node(node: Object) -> bool:
    """Whether a `pinnace agent` process runs the Node, not this process's pool."""
    return AGENT_LABEL in (node["metadata"].get("labels") or {})


@dataclass(frozen=True)
class ClusterOptions:
    """What configures the components: `pinnace up`'s flags less the serving ones."""

    nodes: Sequence[NodeConfig] = ()
    scheduler: bool = True
    """Run kube-scheduler; without it pods stay Pending until something binds them."""
    scheduler_config: SchedulerConfiguration | None = None
    placer: Placer | None = None
    """Chooses the scheduler's nodes among the feasible ones instead of Score (the research
    environment, `pinnace.gym`)."""
    controllers: bool = True
    """Run kube-controller-manager's controllers (the namespace and ServiceAccount controllers
    and the root CA publisher always run: pods cannot be admitted or started without what
    they create)."""
    kube_state_metrics: bool = True
    """Serve kube-state-metrics' families at /metrics/cluster (informers on pods, nodes,
    Deployments and HPAs); a simulation, which nothing scrapes, goes without."""
    dashboard: bool = True
    """Serve the web dashboard at /dashboard/ (informers on nodes, pods, Events and the
    workloads); a simulation, which nobody looks at live, goes without."""
    usage_history: UsageHistory | None = None
    """Where to keep samples of the cluster (`metrics.history`), read by the dashboard's
    charts and the VPA's prometheus storage: a history of the default resolution and windows
    when None and the dashboard is served or the VPA reads it; a simulation keeps its own
    samples (`sim.observe`)."""
    node_lifecycle: NodeLifecycleConfig = field(default_factory=NodeLifecycleConfig)
    workloads: WorkloadOptions = field(default_factory=WorkloadOptions)
    services: ServiceNetwork = field(default_factory=ServiceNetwork)
    """The service CIDR, node port range, and the address and port the `kubernetes` Service
    leads to."""
    cluster_autoscaler: AutoscalerOptions | None = None
    """Run the cluster autoscaler over the node pools with a maxSize (docs/autoscaling.md)."""
    vertical_pod_autoscaler: VPAOptions | None = field(default_factory=VPAOptions)
    """Run the Vertical Pod Autoscaler's recommender and updater (with the controllers; its
    admission runs in the API server); None: without them."""
    housekeeping_interval: float = HOUSEKEEPING_INTERVAL
    """How often, at most, the nodes' metrics endpoints read their container stats (the
    kubelet's --housekeeping-interval)."""
    compaction_interval: float = DEFAULT_COMPACTION_INTERVAL
    event_ttl: float = DEFAULT_EVENT_TTL
    resource_quota_sync_period: float = DEFAULT_QUOTA_SYNC_PERIOD
    """How often every ResourceQuota is recounted (`QuotaResync`)."""
    root_ca: str = ""
    """The cluster's CA certificate (PEM), which every namespace's kube-root-ca.crt ConfigMap
    publishes; empty: one made from the seed (`rootcacertpublisher.self_signed_ca`)."""
    cluster_signing: ClusterSigning = field(default_factory=ClusterSigning)
    """The CA the csrsigning controller signs CertificateSigningRequests with
    (--cluster-signing-cert-file and -key-file; `pinnace up --tls` gives the cluster CA), and
    --cluster-signing-duration; without a CA no request is signed."""
    features: FeatureGates = field(default_factory=FeatureGates)
    """The feature gates every component is started with (`--feature-gates`)."""
    pod_security: PodSecurityConfiguration = field(default_factory=PodSecurityConfiguration)
    """PodSecurity admission's defaults and exemptions (`--admission-control-config-file`)."""
    service_account_key: str = ""
    """The service account signing key (PEM, ECDSA P-256) that signs and checks service
    account tokens; empty: one drawn from the seed."""
    service_account_issuer: str = DEFAULT_ISSUER
    """The tokens' `iss`, and the API audience (--service-account-issuer)."""
    service_account_max_token_expiration: int = 0
    """The longest a TokenRequest may ask for, in seconds; 0: no limit but 2^32 s."""
    hostname: str = DEFAULT_HOSTNAME
    """The host the scheduler reports its Events from: `pinnace up` gives the machine's
    (os.Hostname, as v1.32's kube-scheduler reads it), a simulation keeps the default so that
    its event log is the same on every machine."""
    seed: int | None = None
    """The root of every random choice (generated names, the scheduler's tie-breaks): a run
    with the same seed makes the same choices; None draws one."""
    default_storage_class: bool = False
    """Create kind's `standard` default StorageClass (rancher.io/local-path, which the PV
    controller's simulated provisioner serves, binding on WaitForFirstConsumer) when the cluster
    has no StorageClass, as kind and minikube ship one: `pinnace up` does, so manifests whose
    claims name no class (the StatefulSet tutorial's `www`) get volumes."""
    simulated: bool = False
    """The simulated mode (`pinnace.sim`): what nobody can observe is accounted for rather
    than done (the leases of healthy nodes are renewed in the node pool's account, read by the
    node lifecycle controller, not written each time; an unchanged node status is not posted
    again), every outcome staying what v1.32 gives. See docs/simulation.md."""


class ControllerManager:
    """kube-controller-manager's controllers that `ClusterOptions.controllers` turns on (node
    lifecycle, taint eviction, the workload controllers) and the Vertical Pod Autoscaler, each
    on a client of its own from `client`: in `pinnace up`'s process (`ControlPlane`), or in
    one of their own against a remote API server (`pinnace controller-manager`). `pod_metrics`
    lists metrics.k8s.io's PodMetrics for the autoscalers; `custom_metrics` reads the custom
    and external metrics APIs for the HPA (None: as on a cluster without an adapter), and
    `mapper` maps the kinds the HPA targets, and the VPA its pods' controllers, to those the
    server serves (None: the built-in kinds only); `heartbeats` is the simulated mode's account
    of lease renewals; `history` is the usage history the VPA's prometheus storage reads (None:
    none, as out of `pinnace up`'s process); `bound_pods` the informer on bound pods
    (`pods_on_nodes`) the node lifecycle and taint eviction controllers share with the
    simulated mode's node agents (None: one of their own)."""

    def __init__(
        self,
        client: Callable[[], Client],
        options: ClusterOptions,
        pod_metrics: PodMetricsLister,
        *,
        custom_metrics: CustomMetricsClient | None = None,
        mapper: KindMapper | None = None,
        heartbeats: NodeHeartbeats | None = None,
        history: PodHistory | None = None,
        bound_pods: Informer | None = None,
        access_review: AccessReview | None = None,
    ) -> None:
        pods = bound_pods if bound_pods is not None else pods_on_nodes(client())
        self.node_lifecycle = NodeLifecycleController(
            client(), options.node_lifecycle, heartbeats=heartbeats, pods=pods
        )
        self.taint_eviction = TaintEvictionController(client(), pods)
        self.workloads = WorkloadControllers(
            client(), pod_metrics, options.workloads, custom_metrics, mapper
        )
        certificates = client()
        self.certificates = CertificateControllers(
            certificates, options.cluster_signing, access_review or reviewed_by(certificates)
        )
        self.vertical_pod_autoscaler: VerticalPodAutoscaling | None = None
        if options.vertical_pod_autoscaler is not None:
            in_place = options.features.in_place_pod_vertical_scaling
            self.vertical_pod_autoscaler = VerticalPodAutoscaling(
                client(),
                pod_metrics,
                replace(options.vertical_pod_autoscaler, in_place=in_place),
                history,
                mapper,
            )

    def components(self) -> list[Component]:
        """In the order they start."""
        optional = [] if self.vertical_pod_autoscaler is None else [self.vertical_pod_autoscaler]
        return [
            self.node_lifecycle,
            self.taint_eviction,
            self.workloads,
            self.certificates,
            *optional,
        ]


class ControlPlane:
    """The API server on `store` and `clock`, and the components `options` asks for.

    plane = ControlPlane(MemoryStore(), Clock(loop), ClusterOptions(nodes=node_configs(3)))
    await plane.start()
    pods = await plane.client().list(PODS, "default")
    await plane.stop()
    """

    def __init__(self, store: Store, clock: Clock, options: ClusterOptions = ClusterOptions()):
        self.store = store
        self.clock = clock
        self.options = options
        self.codec = store.codec
        """What the cluster packs objects with: its store's (built first: a store opening on
        its log packs as it reads), and every component that keeps objects packed shares it.
        Another cluster in the process, on a store of its own, packs and learns apart."""
        self.randomness = Randomness(options.seed)
        tokens = service_account_issuer(
            self.randomness,
            options.service_account_key,
            options.service_account_issuer,
            options.service_account_max_token_expiration,
        )
        self.server = APIServer(
            store,
            clock,
            self.randomness,
            options.services,
            service_accounts=True,
            features=options.features,
            tokens=tokens,
        )
        self.server.admission.pod_security_configuration = options.pod_security
        self.compactor = Compactor(store, clock, options.compaction_interval)
        self.event_expiry = Expiry(store, clock, kind_prefix(EVENT), options.event_ttl)
        self.quota_resync = QuotaResync(
            store, clock, self.server.admission.resync, options.resource_quota_sync_period
        )
        self.custom_resource_definitions = CustomResourceDefinitions(
            self.client(), self.server.kinds
        )
        """apiextensions-apiserver's controllers, in the API server's process."""
        self.namespaces = NamespaceController(self.client(), self._served_kinds)
        self.service_accounts = ServiceAccountsController(self.client())
        root_ca = options.root_ca or self_signed_ca(self.randomness, clock.now())
        self.root_ca_publisher = RootCACertPublisher(self.client(), root_ca)
        self.tokens_controller = TokensController(self.client(), tokens, root_ca)
        # The simulated mode's node agents and controllers, in one process on a store that
        # packs nothing, follow the bound pods through one informer.
        bound_pods = (
            pods_on_nodes(self.client()) if options.simulated and options.controllers else None
        )
        self.nodes = NodeAgentPool(
            self.client(),
            options.nodes,
            codec=self.codec,
            simulated=options.simulated,
            features=options.features,
            housekeeping_interval=options.housekeeping_interval,
            bound_pods=bound_pods,
        )
        self.server.log_source = self.nodes.read_log
        if options.simulated:
            self.server.deferred_writes = self.nodes
        self.kubelets = KubeletClient(remote=_agent_process_node)
        """The kubelets of `pinnace agent` processes, as the API server reaches them."""
        self._addresses: Remembered[tuple[int, str | None]] = Remembered(1 << 16)
        """The node proxy's memory of where each node's kubelet is (`node_proxy`)."""
        self.server.kubelets = self.kubelets
        self.agent_summaries = AgentSummaries(self.kubelets, nodes=self._agent_nodes())
        self.server.agent_summaries = self.agent_summaries
        self.server.stream_source = self.nodes
        self.server.metrics_source = self.nodes.summaries
        self.server.custom_metrics = SimulatedMetricsAdapter(self.client())
        self.scheduler: SchedulerService | None = None
        self.explainer: PodExplainer | None = None
        """What `pinnace scheduler explain` asks of the cluster's scheduler."""
        if options.scheduler:
            self.scheduler = SchedulerService(
                self.client(),
                options.scheduler_config,
                self.randomness,
                self.nodes.summaries,
                options.placer,
                LocalMetricsClient(self.server),
                hostname=options.hostname,
            )
            self.explainer = cluster_explainer(
                self.client(), options.scheduler_config, self.scheduler
            )
        self.node_lifecycle: NodeLifecycleController | None = None
        self.taint_eviction: TaintEvictionController | None = None
        self.workloads: WorkloadControllers | None = None
        self.vertical_pod_autoscaler: VerticalPodAutoscaling | None = None
        self.certificates: CertificateControllers | None = None
        self.history: UsageHistory | None = options.usage_history
        vpa = options.vertical_pod_autoscaler
        if self.history is None and (
            options.dashboard or (vpa is not None and vpa.storage == PROMETHEUS)
        ):
            self.history = UsageHistory()
        if options.controllers:
            manager = ControllerManager(
                self.client,
                options,
                lambda namespace, selector: list_pod_metrics(self.server, namespace, selector),
                custom_metrics=LocalMetricsClient(self.server),
                mapper=RegistryMapper(self.server.kinds),
                heartbeats=self.nodes if options.simulated else None,
                history=None if self.history is None else self.pod_history,
                bound_pods=bound_pods,
                access_review=self._access_review,
            )
            self.node_lifecycle = manager.node_lifecycle
            self.taint_eviction = manager.taint_eviction
            self.workloads = manager.workloads
            self.vertical_pod_autoscaler = manager.vertical_pod_autoscaler
            self.certificates = manager.certificates
        self.cluster_autoscaler: ClusterAutoscaler | None = None
        if options.cluster_autoscaler is not None:
            self.cluster_autoscaler = ClusterAutoscaler(
                self.client(),
                options.cluster_autoscaler,
                self.nodes,
                options.scheduler_config,
                self.randomness.child("cluster-autoscaler"),
            )
        self.registries: dict[str, CollectorRegistry] = {"/metrics": CollectorRegistry()}
        """HTTP path -> the Prometheus registry served there (docs/monitoring.md): the
        cluster's own, so two clusters in one process never share one."""
        self.registries["/metrics"].register(StorageObjects(store, self._served_kinds))
        self.kube_state: KubeStateMetrics | None = None
        if options.kube_state_metrics:
            self.kube_state = KubeStateMetrics(self.client(), self.codec)
            self.registries[KUBE_STATE_PATH] = CollectorRegistry()
            self.registries[KUBE_STATE_PATH].register(self.kube_state)
        self.history_recorder: HistoryRecorder | None = None
        self.history_agent_summaries: AgentSummaries | None = None
        if self.history is not None:
            if not options.simulated:  # agent processes' nodes (none join a simulated cluster)
                self.history_agent_summaries = AgentSummaries(
                    self.kubelets, " for the usage history", nodes=self._agent_nodes()
                )
            self.history_recorder = HistoryRecorder(
                self.client(),
                self.history,
                self.nodes.resource_metrics,
                None if self.scheduler is None else self.scheduler.core,
                self.nodes.oom_kills,
                None
                if self.history_agent_summaries is None
                else self.history_agent_summaries.scrape,
            )
        self.dashboard: Dashboard | None = None
        if options.dashboard and self.history is not None:  # the history is kept for it
            self.dashboard = Dashboard(
                self.client(), self.nodes.summaries, self.history, self.codec
            )
        if self.cluster_autoscaler is not None:
            self.registries["/metrics/cluster-autoscaler"] = CollectorRegistry()
            self.registries["/metrics/cluster-autoscaler"].register(
                AutoscalerMetrics(self.cluster_autoscaler.stats)
            )
        if self.scheduler is not None:
            self.registries["/metrics/scheduler"] = CollectorRegistry()
            self.registries["/metrics/scheduler"].register(self.scheduler.core.metrics)
        self._started: list[Component] = []

    async def node_fault(
        self, node: str, fault: str, query: Mapping[str, Sequence[str]]
    ) -> dict[str, Any]:
        """What `pinnace node FAULT NODE` asks of the cluster's nodes (`kubelet.faults`): of
        this process's pool, or relayed to the agent process running the node."""
        found = await self._remote_node(node)
        if found is not None:
            parameters = {k: list(v) for k, v in query.items()}
            suffix = f"?{urlencode(parameters, doseq=True)}" if parameters else ""
            path = f"{FAULTS_PATH}/{quote(fault, safe='')}{suffix}"
            return await self.kubelets.post(found, path)
        return await inject(self.nodes, node, fault, query)

    async def node_proxy(
        self, node: str, method: str, path: str, query: str, headers: list[tuple[bytes, bytes]]
    ) -> Relayed:
        """What the API server's node proxy reaches on a node's kubelet (`kubelet.endpoints`):
        in-process for this process's nodes, relayed over the network for an agent process's
        (at the kubelet address its Node gives, remembered until the Node is written again)."""
        if node not in self.nodes.agents:  # its kubelet may be elsewhere
            address = await self.server.derived(
                catalog.kind("", "nodes"), "", node, self._kubelet_address, self._addresses
            )
            if address is not None:
                target = f"{path}?{query}" if query else path
                return await self.kubelets.relay(address, node, method, target, headers)
        body, content_type = self.nodes.proxy(node, path)
        return Relayed(200, [("Content-Type", content_type)], body)

    def _kubelet_address(self, node: Object) -> str | None:
        """host:port of the Node's kubelet if an agent process runs it, else None."""
        return self.kubelets.address_of(node) if self.kubelets.remote(node) else None

    async def _remote_node(self, node: str) -> Object | None:
        """The Node, if an agent process runs its kubelet."""
        try:
            found = await self.server.get(catalog.kind("", "nodes"), "", node)
        except StatusError as e:
            if e.code != 404:
                raise
            return None
        return found if self.kubelets.remote(found) else None

    def http_app(self, server_address: str = "", security: Security | None = None) -> APIApp:
        """The HTTP front end of the cluster's API server, with every path the cluster serves
        beside the API (metrics, node proxy and faults, the scheduler's explanations, the
        dashboard); `server_address` is the host:port clients reach it at; `security` who
        may reach them (everyone when None)."""
        return APIApp(
            self.server,
            self.randomness,
            server_address=server_address,
            explainer=self.explainer,
            node_faults=self.node_fault,
            metrics=self.registries,
            metrics_ready=self.metrics_ready,
            node_proxy=self.node_proxy,
            dashboard=None if self.dashboard is None else self.dashboard.respond,
            security=security,
            history=(
                None
                if self.history is None
                else lambda namespace, name, container: self.pod_history(
                    f"{namespace}/{name}", container
                )
            ),
            components=self.component_health,
        )

    async def component_health(self) -> list[ComponentHealth]:
        """The checks behind ComponentStatuses: the scheduler and the controller manager this
        plane runs answer ok; one it does not is probed where kube-apiserver probes it (its
        secure port on 127.0.0.1: a `pinnace scheduler` there answers); the store, etcd-0 to
        v1.32, answers ok while it serves this request."""
        runs = {"scheduler": self.scheduler is not None, "controller-manager": bool(self.workloads)}
        ports = {"scheduler": SCHEDULER_PORT, "controller-manager": CONTROLLER_MANAGER_PORT}

        async def check(name: str) -> ComponentHealth:
            return healthy(name) if runs[name] else await probe_healthz(name, ports[name])

        checked = await asyncio.gather(*(check(name) for name in runs))
        return [*checked, healthy("etcd-0")]

    async def pod_history(
        self, key: str, container: str = ""
    ) -> dict[str, list[float | None]] | None:
        """The usage history's series of the pod "namespace/name", or of its `container`
        (None: not held)."""
        assert self.history is not None
        return self.history.container(key, container) if container else self.history.pod(key)

    async def metrics_ready(self, path: str) -> None:
        """Start what a scrape of `path` reads, if it has not been (kube-state-metrics' caches
        start with the first scrape of /metrics/cluster)."""
        if path == KUBE_STATE_PATH and self.kube_state is not None:
            await self.kube_state.ready()

    def _agent_nodes(self) -> Informer:
        """A watch of the `pinnace agent` processes' Nodes, for a reader of their summaries
        to forget those gone."""
        return Informer(self.client(), catalog.kind("", "nodes"), label_selector=AGENT_LABEL)

    async def _access_review(self, spec: Object) -> bool:
        """A SubjectAccessReview answered by the API server's authorizer, in process."""
        review = {"spec": spec}
        answered = await answer(
            self.server.authorizer, SUBJECT_ACCESS_REVIEW, "", review, ANONYMOUS_USER
        )
        return bool(answered["status"]["allowed"])

    def _served_kinds(self) -> tuple[Kind, ...]:
        """The catalog's kinds and those of the API server's established CRDs."""
        return catalog.kinds() + self.server.kinds.added_kinds()

    def client(self) -> LocalClient:
        """A new in-process client of the API server, as each component has its own."""
        return LocalClient(self.server)

    def components(self) -> list[Component]:
        """Every component, in the order they start (the reverse of the order they stop)."""
        optional = (
            self.node_lifecycle,
            self.taint_eviction,
            self.scheduler,
            self.workloads,
            self.certificates,
            self.cluster_autoscaler,
            self.vertical_pod_autoscaler,
            self.kube_state,
            self.history_agent_summaries,  # before the recorder, which reads through it
            self.history_recorder,
            self.dashboard,
        )
        return [
            self.compactor,
            self.event_expiry,
            self.quota_resync,
            self.custom_resource_definitions,
            self.namespaces,
            self.service_accounts,
            self.root_ca_publisher,
            self.tokens_controller,
            self.nodes,
            self.agent_summaries,
            *(c for c in optional if c is not None),
        ]

    async def start(self) -> None:
        """Create what every cluster has, then start each component in turn."""
        await bootstrap(self.server)
        if self.options.default_storage_class:
            await _ensure_default_storage_class(self.client())
        for component in self.components():
            await component.start()
            self._started.append(component)

    async def stop(self) -> None:
        """Stop the started components, last first; each leaves no task behind."""
        while self._started:
            await self._started.pop().stop()


STANDARD_STORAGE_CLASS = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {IS_DEFAULT_CLASS: "true"}},
    "provisioner": "rancher.io/local-path",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "WaitForFirstConsumer",
}
"""kind's default class."""


async def _ensure_default_storage_class(client: LocalClient) -> None:
    if not (await client.list(STORAGE_CLASS, ""))["items"]:
        await client.create(STORAGE_CLASS, "", copy.deepcopy(STANDARD_STORAGE_CLASS))
