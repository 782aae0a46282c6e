"""The stats summary of a node (the kubelet's /stats/summary), built from what its runtime
reports of the running containers.

How the node figures are made:

- CPU and memory working set: the sum of the pods', plus, for memory, what the system's own
  daemons hold, taken to be the node's kube-reserved and system-reserved memory (0 unless
  configured): that is what those reservations are for. Memory capacity is the node's memory
  capacity.
- nodefs: the node's ephemeral-storage capacity; used by the pods' writable layers, logs and
  local volumes, by what exited containers leave until they are removed, and by the node's
  images. The images live on the same filesystem, as in a default containerd setup, so
  imagefs shows the same filesystem: the same capacity, usage and inodes as nodefs.
- unless the node's pool gives images a filesystem of their own (`imagefs.capacity`, as
  containerd's root on a disk of its own): then imagefs holds the images and the containers'
  writable layers, and nodefs the logs and local volumes.
- inodes: one per 16 KiB of the filesystem (ext4's default ratio), used in the same ratio.
- PIDs: pid_max is 4194304 (the kernel's limit on 64-bit, what systemd sets); in use, the sum
  of the pods', each pod at most podPidsLimit.

A pod appears while it has a running container or has not finished; its containers are the
running ones.

The summaries of many nodes (`NodeReadings`) are made one node at a time, as they are read: the
metrics API looks at the nodes of the pods it reports on, not at every node.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

from pinnace.api.stats import ContainerStats, NodeStats, PodStats, Summary
from pinnace.kubelet.config import NodeConfig
from pinnace.kubelet.runtime import Machine
from pinnace.kubelet.usage import NANO
from pinnace.kubelet.worker import PodWorker
from pinnace.resources.lists import parse_resource_list
from pinnace.resources.names import CPU, MEMORY

PID_MAX = 4_194_304
BYTES_PER_INODE = 16 * 1024

Agent = TypeVar("Agent")
Reading = TypeVar("Reading")


def machine(config: NodeConfig) -> Machine:
    """The hardware a simulated node runs on: its capacity, and the reserved memory the
    system's daemons hold."""
    capacity = config.capacity_list()
    reserved = 0
    for field, amounts in (
        ("kubeReserved", config.kube_reserved),
        ("systemReserved", config.system_reserved),
    ):
        quantity = parse_resource_list(amounts, field).get(MEMORY)
        reserved += quantity.value() if quantity is not None else 0
    cpu, memory = capacity.get(CPU), capacity.get(MEMORY)
    return Machine(
        cpu_nano_cores=float(cpu.as_fraction() * NANO) if cpu is not None else math.inf,
        memory_bytes=float(memory.value()) if memory is not None else math.inf,
        system_memory_bytes=float(reserved),
    )


def node_summary(
    config: NodeConfig,
    workers: Iterable[PodWorker],
    stats: Mapping[str, ContainerStats],
    system_memory_bytes: float,
    image_bytes: int,
    now: float,
) -> Summary:
    """The summary at `now` of a node whose runtime reports `stats` by container id, and whose
    images take `image_bytes`."""
    pods = []
    left_on_disk = dict(stats)
    for worker in workers:
        containers = [
            left_on_disk.pop(c.current.id)
            for c in worker.containers
            if c.running and c.current is not None and c.current.id in left_on_disk
        ]
        if not containers and worker.finished:
            continue
        pids = sum(c.pids for c in containers)
        if config.pod_pids_limit > 0:
            pids = min(pids, config.pod_pids_limit)
        pods.append(PodStats(worker.uid, worker.namespace, worker.name, containers, pids=pids))
    memory = config.capacity_list().get(MEMORY)
    every = [c for p in pods for c in p.containers] + list(left_on_disk.values())
    rootfs = sum(c.rootfs_used_bytes for c in every)
    logs = sum(c.logs_used_bytes for c in every)
    fs_capacity, fs_used, image_fs = filesystems(config, rootfs, logs, image_bytes)
    inodes = fs_capacity // BYTES_PER_INODE
    inodes_used = -(-fs_used // BYTES_PER_INODE)
    node = NodeStats(
        cpu_usage_nano_cores=sum(p.cpu_usage_nano_cores for p in pods),
        memory_capacity_bytes=memory.value() if memory is not None else 0,
        memory_working_set_bytes=round(system_memory_bytes)
        + sum(p.memory_working_set_bytes for p in pods),
        nodefs_capacity_bytes=fs_capacity,
        nodefs_used_bytes=fs_used,
        nodefs_inodes=inodes,
        nodefs_inodes_used=inodes_used,
        imagefs_capacity_bytes=image_fs[0],
        imagefs_used_bytes=image_fs[1],
        imagefs_inodes=image_fs[0] // BYTES_PER_INODE,
        imagefs_inodes_used=-(-image_fs[1] // BYTES_PER_INODE),
        pid_max=PID_MAX,
        pids=sum(p.pids for p in pods),
    )
    return Summary(now, node, pods)


def filesystems(
    config: NodeConfig, rootfs: int, logs: int, image_bytes: int
) -> tuple[int, int, tuple[int, int]]:
    """The nodefs' capacity and use, and the imagefs' (capacity, use), of a node whose
    containers' writable layers take `rootfs` bytes, their logs `logs` and its images
    `image_bytes`: one filesystem, the node's ephemeral storage, unless the node has an imagefs
    of its own, which holds the images and the writable layers."""
    fs_capacity = config.ephemeral_storage_bytes
    if config.imagefs_capacity is None:
        fs_used = rootfs + logs + image_bytes
        return fs_capacity, fs_used, (fs_capacity, fs_used)
    return fs_capacity, logs, (config.imagefs_capacity, rootfs + image_bytes)


class NodeReadings(Mapping[str, Reading], Generic[Agent, Reading]):
    """Node name -> what `read` makes of the node's agent (its summary, its usage), made when
    the node is first read and then kept (the mapping is one snapshot: read it, then let it
    go), so reading one node costs one node's reading."""

    def __init__(self, agents: Mapping[str, Agent], read: Callable[[Agent], Reading]) -> None:
        self._agents = agents
        self._read = read
        self._made: dict[str, Reading] = {}

    def __getitem__(self, name: str) -> Reading:
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self._read(self._agents[name])
        return made

    def __contains__(self, name: object) -> bool:
        return name in self._agents

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents)

    def __len__(self) -> int:
        return len(self._agents)
