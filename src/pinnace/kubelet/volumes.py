"""The volumes whose files Pinnace models, and the files a container sees through its
volumeMounts.

The kubelet mounts a pod's volumes before it starts any of its containers (the volume
manager's WaitForAttachAndMount). A configMap or secret volume holds a file per key of the
ConfigMap (`data` and `binaryData`) or Secret (`data`, decoded), or, with `items`, the listed
keys at their paths (which may name subdirectories). One that is missing and not optional, or
an `items` key it does not have, fails the mount: the pod stays in ContainerCreating and the
kubelet records a FailedMount event (`MountVolume.SetUp failed for volume "config" : configmap
"x" not found`) until it appears. An optional one that is missing mounts as an empty
directory. A downwardAPI volume holds the pod's fields it names; a projected volume holds the
files of its sources (configMap, secret, downwardAPI, serviceAccountToken) together, failing
with the errors of every source that fails. The ServiceAccount admission plugin gives every
pod one such volume, kube-api-access-xxxxx: `token`, `ca.crt` (from the namespace's
kube-root-ca.crt ConfigMap) and `namespace`.

A mounted volume follows its ConfigMaps and Secrets: when one changes, the files change (the
kubelet does it on its next sync of the pod), except where a container mounts it with a
`subPath`, which keeps what it saw when it started.

An emptyDir volume starts empty and holds what the pod's containers write into it, shared by
every container that mounts it (an init container's files are there for the app containers).
A container's files (`Filesystem`) are its mounts of the pod's volumes over its own writable
layer (what it writes elsewhere, gone when it restarts); the image's own files are not
modelled. A written file keeps its last `KEPT_BYTES` in memory (what `cat` shows of a longer
one), and counts every byte written (what `tail -F` follows).
"""

from __future__ import annotations

import base64
import builtins
import fnmatch
import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.kubelet.sources import SOURCE_KINDS, SourceKind, SourceLookup, SourceName

FAILED_MOUNT = "FailedMount"
KEPT_BYTES = 64 * 1024
"""What a written file keeps in memory of its end: a container appending to a log file for
ever must not hold it all."""
_MODELLED = ("configMap", "secret", "downwardAPI", "projected", "emptyDir")
_SUBSCRIPT = re.compile(r"metadata\.(labels|annotations)\['(.*)'\]")

Files = dict[str, str]
"""Path relative to the volume -> content."""


class WritableFiles(dict[str, str]):
    """The files of an emptyDir volume or a container's writable layer: containers write them.
    `sizes` counts what was written to each file in all, of which the content keeps the end."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, int] = {}

    def write(self, relative: str, text: str, append: bool) -> None:
        content = self.get(relative, "") + text if append else text
        self[relative] = content[-KEPT_BYTES:]
        self.sizes[relative] = (self.sizes.get(relative, 0) if append else 0) + len(text)


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

    def write(self, path: str, text: str, append: bool) -> str | None:
        """Write (or append) `text` to a file; busybox sh's error when it cannot be."""
        failed = self.cannot_write(path)
        found = self._resolve(path)
        if failed is None and found is not None and isinstance(found[0], WritableFiles):
            found[0].write(found[1], text, append)
        return failed

    def cannot_write(self, path: str) -> str | None:
        """Why a file cannot be written (busybox sh's error), None if it can."""
        found = self._resolve(path)
        if found is None or not found[1] or self.is_dir(path):
            return f"sh: can't create {path}: Is a directory"
        if not isinstance(found[0], WritableFiles):
            return f"sh: can't create {path}: Read-only file system"
        return None

    def size(self, path: str) -> int | None:
        """How many bytes were written to a file in all (its length if it was never written);
        None when there is no such file."""
        found = self._resolve(path)
        if found is None or found[1] not in found[0]:
            return None
        files, relative = found
        sizes = files.sizes if isinstance(files, WritableFiles) else {}
        return sizes.get(relative, len(files[relative]))

    def is_dir(self, path: str) -> bool:
        return self.list(path) is not None and self.read(path) is None

    def list(self, path: str) -> list[str] | None:
        """What `ls` prints for `path`: the sorted names in a directory, the path of a file;
        None when there is nothing there."""
        found = self._resolve(path)
        names: set[str] = set()
        normal = _absolute(path)
        for mount, _ in self.mounts:  # mount points below `path` are directories in it
            if mount != normal and mount.startswith(normal.rstrip("/") + "/"):
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


def source_payload(
    kind: SourceKind, source: Mapping[str, Any], found: Mapping[str, Any] | None
) -> Files | str:
    """The files of a configMap or secret volume or projection (MakePayload), or why the
    mount fails."""
    name = source.get(kind.volume_name, "")
    optional = bool(source.get("optional"))
    if found is None:
        if not optional:
            return kind.not_found(name)
        found = {}
    values = kind.file_values(found)
    items = source.get("items")
    if not items:
        return values
    files: Files = {}
    for item in items:
        key = item.get("key", "")
        if key in values:
            files[posixpath.normpath(item.get("path", key))] = values[key]
        elif not optional:
            return kind.missing_volume_key.format(key=key)
    return files


def downward_files(items: Any, pod: Mapping[str, Any]) -> Files:
    """The files of a downwardAPI volume or projection: each item's fieldRef, as the
    kubelet formats it (a map one `key="value"` line per key, sorted). resourceFieldRef
    items are not modelled."""
    files: Files = {}
    for item in items or ():
        path = (item.get("fieldRef") or {}).get("fieldPath")
        if path:
            files[posixpath.normpath(item.get("path", ""))] = _pod_field(pod, path)
    return files


def _pod_field(pod: Mapping[str, Any], path: str) -> str:
    meta = pod.get("metadata") or {}
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f"{k}={json.dumps(values[k], ensure_ascii=False)}" for k in sorted(values))
    subscript = _SUBSCRIPT.fullmatch(path)
    if subscript is not None:
        return (meta.get(subscript.group(1)) or {}).get(subscript.group(2), "")
    return str(meta.get(path.removeprefix("metadata."), ""))


def service_account_token(pod: Mapping[str, Any], projection: Mapping[str, Any]) -> str:
    """What a serviceAccountToken projection's file holds. Pinnace serves no TokenRequest: the
    token is an unsigned JWT-shaped string naming the service account and the pod it is bound
    to (docs/differences.md)."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    namespace, account = meta.get("namespace", ""), spec.get("serviceAccountName", "")
    claims = {
        "aud": [projection.get("audience") or "https://kubernetes.default.svc.cluster.local"],
        "iss": "https://kubernetes.default.svc.cluster.local",
        "kubernetes.io": {
            "namespace": namespace,
            "pod": {"name": meta.get("name", ""), "uid": meta.get("uid", "")},
            "serviceaccount": {"name": account},
        },
        "sub": f"system:serviceaccount:{namespace}:{account}",
    }
    parts = ({"alg": "none", "typ": "JWT"}, claims)
    return ".".join(_base64url(json.dumps(p, separators=(",", ":"))) for p in parts) + "."


def _base64url(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _projected_payload(
    volume: Mapping[str, Any], pod: Mapping[str, Any], lookup: SourceLookup
) -> Files | str:
    """The projected volume's sources in order, later files replacing earlier ones; the
    errors of every source that fails, together."""
    files: Files = {}
    errors: list[str] = []
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    for source in (volume.get("projected") or {}).get("sources") or ():
        payload: Files | str = {}
        for kind in SOURCE_KINDS:
            if source.get(kind.volume) is not None:
                projection = source[kind.volume]
                found = lookup(kind, namespace, projection.get("name", ""))
                payload = source_payload(kind, projection, found)
        if source.get("downwardAPI") is not None:
            payload = downward_files(source["downwardAPI"].get("items"), pod)
        if source.get("serviceAccountToken") is not None:
            projection = source["serviceAccountToken"]
            payload = {projection.get("path", ""): service_account_token(pod, projection)}
        if isinstance(payload, str):
            errors.append(payload)
        else:
            files.update(payload)
    if errors:
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return files


def volume_payload(
    volume: Mapping[str, Any], pod: Mapping[str, Any], lookup: SourceLookup
) -> Files | str | None:
    """The files of one of the volumes Pinnace models, or why its mount fails; None for an
    emptyDir (its files are the containers')."""
    if volume.get("emptyDir") is not None:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    for kind in SOURCE_KINDS:
        source = volume.get(kind.volume)
        if source is not None:
            found = lookup(kind, namespace, source.get(kind.volume_name, ""))
            return source_payload(kind, source, found)
    if volume.get("downwardAPI") is not None:
        return downward_files(volume["downwardAPI"].get("items"), pod)
    return _projected_payload(volume, pod, lookup)


def _modelled(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(field) is not None for field in _MODELLED)


def _source_names(volume: Mapping[str, Any]) -> set[SourceName]:
    sources = [volume, *((volume.get("projected") or {}).get("sources") or ())]
    names = set()
    for source in sources:
        for kind in SOURCE_KINDS:
            ref = source.get(kind.volume)
            if ref is not None:
                field = kind.volume_name if source is volume else "name"
                names.add((kind.resource, ref.get(field, "")))
    return names


class PodVolumes:
    """The volumes of one pod whose files Pinnace models (configMap, secret, downwardAPI and
    projected ones), by volume name, kept current by `mount`."""

    __slots__ = ("files", "mounted", "sources")  # one per pod: thousands on a node pool

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self.sources: dict[str, Mapping[str, Any]] = {
            v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or () if _modelled(v)
        }
        self.files: dict[str, Files] = {}
        """The volumes set up so far."""
        self.mounted = not self.sources
        """Every volume has been set up: the containers may start."""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodVolumes:
        """The pod's: one that nothing changes, shared, for every pod without modelled
        volumes."""
        volumes = cls(pod)
        return volumes if volumes.sources else _NO_VOLUMES

    def source_names(self) -> set[SourceName]:
        """The ConfigMaps and Secrets the volumes hold files of."""
        return set().union(*map(_source_names, self.sources.values()))

    def mount(self, pod: Mapping[str, Any], lookup: SourceLookup) -> list[str]:
        """Set up (or bring up to date) every volume; the FailedMount messages of those that
        fail. A volume that fails keeps the files it had."""
        failures = []
        for volume, source in self.sources.items():
            payload = volume_payload(source, pod, lookup)
            if isinstance(payload, str):
                failures.append(f'MountVolume.SetUp failed for volume "{volume}" : {payload}')
                continue
            if payload is None:
                self.files.setdefault(volume, WritableFiles())
                continue
            files = self.files.setdefault(volume, {})
            if files != payload:
                files.clear()
                files.update(payload)
        self.mounted = len(self.files) == len(self.sources)
        return failures

    def filesystem(self, container: Mapping[str, Any]) -> Filesystem:
        """The files `container` sees through its volumeMounts over a writable layer of its
        own, as it starts."""
        mounts: list[tuple[str, Mapping[str, str]]] = [("/", WritableFiles())]
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
