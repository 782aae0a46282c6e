"""configMap volumes and the files a container sees through its volumeMounts.

The kubelet mounts a pod's volumes before it starts any of its containers (the volume
manager's WaitForAttachAndMount). A configMap volume holds a file per key of the ConfigMap
(`data` and `binaryData`), or, with `items`, the listed keys at their paths (which may name
subdirectories). A ConfigMap that is missing and not optional, or an `items` key it does not
have, fails the mount: the pod stays in ContainerCreating and the kubelet records a FailedMount
event (`MountVolume.SetUp failed for volume "config" : configmap "x" not found`) until the
ConfigMap appears. An optional one that is missing mounts as an empty directory.

A mounted volume follows its ConfigMap: when the ConfigMap changes, the files change (the
kubelet does it on its next sync of the pod), except where a container mounts it with a
`subPath`, which keeps what it saw when it started.

A container's files (`Filesystem`) are its mounts of the pod's volumes, nothing else: the
image's own files are not modelled.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import fnmatch
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.kubelet.configmaps import ConfigMapLookup

FAILED_MOUNT = "FailedMount"

Files = dict[str, str]
"""Path relative to the volume -> content."""


@dataclass
class Filesystem:
    """A container's files: (mount path, files) pairs, the later mount winning where two
    overlap. The files of a volume are the pod's live ones, updated in place."""

    mounts: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)

    def _resolve(self, path: str) -> tuple[Mapping[str, str], str] | None:
        path = _absolute(path)
        best: tuple[Mapping[str, str], str] | None = None
        best_length = -1
        for mount, files in self.mounts:
            inside = path == mount or path.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > best_length:
                best, best_length = (files, path[len(mount) :].strip("/")), len(mount)
        return best

    def read(self, path: str) -> str | None:
        """The content of a file; None when there is no such file (or it is a directory)."""
        found = self._resolve(path)
        return None if found is None else found[0].get(found[1])

    def is_dir(self, path: str) -> bool:
        return self.list(path) is not None and self.read(path) is None

    def list(self, path: str) -> list[str] | None:
        """What `ls` prints for `path`: the sorted names in a directory, the path of a file;
        None when there is nothing there."""
        found = self._resolve(path)
        names: set[str] = set()
        normal = _absolute(path)
        for mount, _ in self.mounts:  # mount points below `path` are directories in it
            if mount.startswith(normal.rstrip("/") + "/"):
                names.add(mount[len(normal.rstrip("/")) + 1 :].split("/", 1)[0])
        if found is not None:
            files, relative = found
            if relative in files:
                return [path]
            prefix = relative + "/" if relative else ""
            names.update(p[len(prefix) :].split("/", 1)[0] for p in files if p.startswith(prefix))
            if not names and relative:
                return None
            return sorted(names)
        return sorted(names) if names else None

    def glob(self, pattern: str) -> builtins.list[str]:
        """The sorted paths that match a shell pattern, hidden names only by a pattern that
        starts them with a dot."""
        parts = _absolute(pattern).split("/")
        found: set[str] = set()
        for mount, files in self.mounts:
            for relative in files:
                path = (mount.rstrip("/") + "/" + relative).split("/")
                found.update("/".join(path[:n]) for n in range(2, len(path) + 1))
        return sorted(
            path
            for path in found
            if len(names := path.split("/")) == len(parts)
            and all(
                fnmatch.fnmatchcase(name, part) and (part[:1] == "." or name[:1] != ".")
                for name, part in zip(names, parts, strict=True)
            )
        )


def _absolute(path: str) -> str:
    return posixpath.normpath("/" + path.lstrip("/"))


def config_map_payload(
    source: Mapping[str, Any], config_map: Mapping[str, Any] | None
) -> Files | str:
    """The files of a configMap volume (MakePayload), or why the mount fails."""
    name = source.get("name", "")
    optional = bool(source.get("optional"))
    if config_map is None:
        if not optional:
            return f'configmap "{name}" not found'
        config_map = {}
    data = config_map.get("data") or {}
    binary = {k: _decoded(v) for k, v in (config_map.get("binaryData") or {}).items()}
    items = source.get("items")
    if not items:
        return {**data, **binary}
    files: Files = {}
    for item in items:
        key = item.get("key", "")
        if key in data or key in binary:
            files[posixpath.normpath(item.get("path", key))] = data.get(key, binary.get(key, ""))
        elif not optional:
            return f"configmap references non-existent config key: {key}"
    return files


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value).decode(errors="replace")
    except (binascii.Error, ValueError):
        return value


class PodVolumes:
    """The configMap volumes of one pod, by volume name, kept current by `mount`."""

    __slots__ = ("files", "mounted", "sources")  # one per pod: thousands on a node pool

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self.sources: dict[str, Mapping[str, Any]] = {
            v["name"]: v["configMap"]
            for v in (pod.get("spec") or {}).get("volumes") or ()
            if v.get("configMap") is not None
        }
        self.files: dict[str, Files] = {}
        """The volumes set up so far."""
        self.mounted = not self.sources
        """Every volume has been set up: the containers may start."""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodVolumes:
        """The pod's: one that nothing changes, shared, for every pod without configMap
        volumes (most pods)."""
        volumes = cls(pod)
        return volumes if volumes.sources else _NO_VOLUMES

    def config_map_names(self) -> set[str]:
        return {source.get("name", "") for source in self.sources.values()}

    def mount(self, namespace: str, lookup: ConfigMapLookup) -> list[str]:
        """Set up (or bring up to date) every volume; the FailedMount messages of those that
        fail. A volume that fails keeps the files it had."""
        failures = []
        for volume, source in self.sources.items():
            payload = config_map_payload(source, lookup(namespace, source.get("name", "")))
            if isinstance(payload, str):
                failures.append(f'MountVolume.SetUp failed for volume "{volume}" : {payload}')
                continue
            files = self.files.setdefault(volume, {})
            if files != payload:
                files.clear()
                files.update(payload)
        self.mounted = len(self.files) == len(self.sources)
        return failures

    def filesystem(self, container: Mapping[str, Any]) -> Filesystem:
        """The files `container` sees through its volumeMounts, as it starts."""
        mounts: list[tuple[str, Mapping[str, str]]] = []
        for mount in container.get("volumeMounts") or ():
            files = self.files.get(mount.get("name", ""))
            if files is None:
                continue
            path = _absolute(str(mount.get("mountPath", "")))
            sub_path = posixpath.normpath(mount["subPath"]) if mount.get("subPath") else ""
            if not sub_path:
                mounts.append((path, files))
            elif sub_path in files:  # a file of its own
                file = {posixpath.basename(path): files[sub_path]}
                mounts.append((posixpath.dirname(path), file))
            else:
                prefix = sub_path + "/"
                below = {p[len(prefix) :]: c for p, c in files.items() if p.startswith(prefix)}
                mounts.append((path, below))
        return Filesystem(mounts)


_NO_VOLUMES = PodVolumes({})
