"""The workload controllers and the garbage collector `pinnace up` runs, sharing one set of
informers."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

from pinnace.client import Client, InformerFactory
from pinnace.controllers import hpa, podgc
from pinnace.controllers.daemonset import DaemonSetController
from pinnace.controllers.deployment import DeploymentController
from pinnace.controllers.disruption import DisruptionController
from pinnace.controllers.garbage_collector import GarbageCollector
from pinnace.controllers.hpa import HorizontalController, PodMetricsLister
from pinnace.controllers.job import JobController
from pinnace.controllers.podgc import PodGCController
from pinnace.controllers.replicaset import ReplicaSetController
from pinnace.controllers.ttl_after_finished import TTLAfterFinishedController


@dataclass(frozen=True)
class WorkloadOptions:
    """kube-controller-manager's flags of the same names (seconds, a pod count)."""

    terminated_pod_gc_threshold: int = podgc.DEFAULT_TERMINATED_POD_THRESHOLD
    horizontal_pod_autoscaler_sync_period: float = hpa.DEFAULT_SYNC_PERIOD
    horizontal_pod_autoscaler_downscale_stabilization: float = (
        hpa.DEFAULT_DOWNSCALE_STABILIZATION_WINDOW
    )


@dataclass
class WorkloadControllers:
    informers: InformerFactory
    replica_sets: ReplicaSetController
    deployments: DeploymentController
    garbage_collector: GarbageCollector
    disruption: DisruptionController
    tasks: list[asyncio.Task[None]]
    jobs: JobController
    ttl_after_finished: TTLAfterFinishedController
    daemon_sets: DaemonSetController
    autoscalers: HorizontalController
    pod_gc: PodGCController

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.informers.stop()


def start_workload_controllers(
    client: Client,
    metrics: PodMetricsLister | None = None,
    options: WorkloadOptions = WorkloadOptions(),
) -> WorkloadControllers:
    """Start the ReplicaSet, Deployment, Job, TTL-after-finished, disruption and DaemonSet
    controllers, the garbage collector and the pod garbage collector on the client's loop;
    and the horizontal pod autoscaler, which reads pod usage through `metrics` (metrics.k8s.io)."""
    informers = InformerFactory(client)
    replica_sets = ReplicaSetController(client, informers)
    deployments = DeploymentController(client, informers)
    garbage_collector = GarbageCollector(client, informers)
    disruption = DisruptionController(client, informers)
    jobs = JobController(client, informers)
    ttl_after_finished = TTLAfterFinishedController(client, informers)
    daemon_sets = DaemonSetController(client, informers)
    autoscalers = HorizontalController(
        client,
        informers,
        metrics,
        sync_period=options.horizontal_pod_autoscaler_sync_period,
        downscale_stabilization_window=options.horizontal_pod_autoscaler_downscale_stabilization,
    )
    pod_gc = PodGCController(client, informers, options.terminated_pod_gc_threshold)
    informers.start()
    loop = client.clock.loop
    tasks = [
        loop.create_task(replica_sets.run()),
        loop.create_task(deployments.run()),
        loop.create_task(garbage_collector.run()),
        loop.create_task(jobs.run()),
        loop.create_task(ttl_after_finished.run()),
        loop.create_task(daemon_sets.run()),
        loop.create_task(autoscalers.run()),
        loop.create_task(disruption.run()),
        loop.create_task(pod_gc.run()),
    ]
    return WorkloadControllers(
        informers,
        replica_sets,
        deployments,
        garbage_collector,
        disruption,
        tasks,
        jobs=jobs,
        ttl_after_finished=ttl_after_finished,
        daemon_sets=daemon_sets,
        autoscalers=autoscalers,
        pod_gc=pod_gc,
    )
