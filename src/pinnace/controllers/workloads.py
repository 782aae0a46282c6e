"""The workload controllers and the garbage collector `pinnace up` runs, sharing one set of
informers."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pinnace.client import Client, InformerFactory
from pinnace.client.custom_metrics import CustomMetricsClient
from pinnace.client.mapper import KindMapper
from pinnace.clock.component import cancel_and_wait
from pinnace.controllers import hpa, podgc
from pinnace.controllers.clusterrole_aggregation import ClusterRoleAggregationController
from pinnace.controllers.cronjob import CronJobController
from pinnace.controllers.daemonset import DaemonSetController
from pinnace.controllers.deployment import DeploymentController
from pinnace.controllers.disruption import DisruptionController
from pinnace.controllers.endpoints import EndpointsController
from pinnace.controllers.endpointslice import EndpointSliceController
from pinnace.controllers.endpointslice_mirroring import EndpointSliceMirroringController
from pinnace.controllers.ephemeral_volume import EphemeralVolumeController
from pinnace.controllers.garbage_collector import GarbageCollector
from pinnace.controllers.hpa import HorizontalController, PodMetricsLister
from pinnace.controllers.job import JobController
from pinnace.controllers.persistentvolume import PersistentVolumeController
from pinnace.controllers.podgc import PodGCController
from pinnace.controllers.replicaset import ReplicaSetController, ReplicationManager
from pinnace.controllers.statefulset import StatefulSetController
from pinnace.controllers.ttl_after_finished import TTLAfterFinishedController
from pinnace.controllers.volume_expand import VolumeExpandController
from pinnace.controllers.volume_protection import PVCProtectionController, PVProtectionController


@dataclass(frozen=True)
class WorkloadOptions:
    """kube-controller-manager's flags of the same names (seconds, a pod count)."""

    terminated_pod_gc_threshold: int = podgc.DEFAULT_TERMINATED_POD_THRESHOLD
    horizontal_pod_autoscaler_sync_period: float = hpa.DEFAULT_SYNC_PERIOD
    horizontal_pod_autoscaler_downscale_stabilization: float = (
        hpa.DEFAULT_DOWNSCALE_STABILIZATION_WINDOW
    )


class WorkloadControllers:
    """The ReplicaSet, ReplicationController, Deployment, Job, CronJob, TTL-after-finished,
    disruption, DaemonSet, StatefulSet and cluster role aggregation controllers, the garbage
    collector and the pod garbage collector, the endpoints, EndpointSlice and EndpointSlice
    mirroring controllers, the persistent volume controller (binding and a simulated
    provisioner), the pvc- and pv-protection controllers, the ephemeral volume controller and
    volume expansion (the expand controller, a simulated resizer); and the horizontal pod
    autoscaler, which reads pod usage through `metrics` (metrics.k8s.io) and custom and
    external metrics through `custom_metrics`, and maps its targets' kinds with `mapper` (the
    built-in kinds only when None)."""

    def __init__(
        self,
        client: Client,
        metrics: PodMetricsLister | None = None,
        options: WorkloadOptions = WorkloadOptions(),
        custom_metrics: CustomMetricsClient | None = None,
        mapper: KindMapper | None = None,
    ) -> None:
        self._loop = client.clock.loop
        self.informers = informers = InformerFactory(client)
        self.replica_sets = ReplicaSetController(client, informers)
        self.replication_controllers = ReplicationManager(client, informers)
        self.deployments = DeploymentController(client, informers)
        self.garbage_collector = GarbageCollector(client, informers)
        self.disruption = DisruptionController(client, informers)
        self.jobs = JobController(client, informers)
        self.cron_jobs = CronJobController(client, informers)
        self.ttl_after_finished = TTLAfterFinishedController(client, informers)
        self.daemon_sets = DaemonSetController(client, informers)
        self.stateful_sets = StatefulSetController(client, informers)
        self.autoscalers = HorizontalController(
            client,
            informers,
            metrics,
            custom_metrics,
            mapper=mapper,
            sync_period=options.horizontal_pod_autoscaler_sync_period,
            downscale_stabilization_window=options.horizontal_pod_autoscaler_downscale_stabilization,
        )
        self.pod_gc = PodGCController(client, informers, options.terminated_pod_gc_threshold)
        self.endpoints = EndpointsController(client, informers)
        self.endpoint_slices = EndpointSliceController(client, informers)
        self.endpoint_slice_mirroring = EndpointSliceMirroringController(client, informers)
        self.cluster_role_aggregation = ClusterRoleAggregationController(client, informers)
        self.persistent_volumes = PersistentVolumeController(client, informers)
        self.pvc_protection = PVCProtectionController(client, informers)
        self.pv_protection = PVProtectionController(client, informers)
        self.ephemeral_volumes = EphemeralVolumeController(client, informers)
        self.volume_expansion = VolumeExpandController(client, informers)
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self.informers.start()
        controllers = (
            self.replica_sets,
            self.replication_controllers,
            self.deployments,
            self.garbage_collector,
            self.jobs,
            self.cron_jobs,
            self.ttl_after_finished,
            self.daemon_sets,
            self.stateful_sets,
            self.autoscalers,
            self.disruption,
            self.pod_gc,
            self.endpoints,
            self.endpoint_slices,
            self.endpoint_slice_mirroring,
            self.cluster_role_aggregation,
            self.persistent_volumes,
            self.pvc_protection,
            self.pv_protection,
            self.ephemeral_volumes,
            self.volume_expansion,
        )
        self._tasks = [self._loop.create_task(c.run()) for c in controllers]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks = []
        await self.informers.stop()
