"""The volumes whose files Pinnace models, and the files a container sees through its
volumeMounts.

The kubelet mounts a pod's volumes before it starts any of its containers (the volume
manager's WaitForAttachAndMount). A configMap or secret volume holds a file per key of the
ConfigMap (`data` and `binaryData`) or Secret (`data`, decoded), or, with `items`, the listed
keys at their paths (which may name subdirectories). One that is missing and not optional, or
an `items` key it does not have, fails the mount: the pod stays in ContainerCreating and the
kubelet records a FailedMount event (`MountVolume.SetUp failed for volume "config" : configmap
"x" not found`) until it appears. An optional one that is missing mounts as an empty
directory. A downwardAPI volume holds the pod's fields and its containers' resources it names
(a limit not set is the node's allocatable, as in the environment); a projected volume holds the
files of its sources (configMap, secret, downwardAPI, serviceAccountToken) together, failing
with the errors of every source that fails. The ServiceAccount admission plugin gives every
pod one such volume, kube-api-access-xxxxx: `token` (a token the kubelet requested for the
pod, `pinnace.kubelet.tokens`), `ca.crt` (from the namespace's kube-root-ca.crt ConfigMap) and
`namespace`. A volume with a token source is set up once the token has come.

A mounted volume follows its ConfigMaps and Secrets: when one changes, the files change (the
kubelet does it on its next sync of the pod), except where a container mounts it with a
`subPath`, which keeps what it saw when it started. A `subPathExpr` is a subPath expanded from
the container's environment (`mount_sub_path`, with the kubelet's errors).

A persistentVolumeClaim volume waits for its claim to be bound (the volume manager's
populator cannot take it before: the claim is missing, being deleted or not bound); the pod
stays in ContainerCreating, with no event from the kubelet: v1.32's syncPod records "Unable to
attach or mount volumes" only for an error that is not its wait's timeout
(`!wait.Interrupted(err)`), so a claim never bound says nothing. Once bound it mounts
as an empty directory the pod's containers write into, as an emptyDir (below); what they wrote
goes with the pod.

An emptyDir volume starts empty and holds what the pod's containers write into it, shared by
every container that mounts it (an init container's files are there for the app containers);
a subPath mount of one of its directories is that directory itself (`Subdirectory`).
A container's files (`Filesystem`) are its mounts of the pod's volumes (read-only where the
mount says `readOnly`, or the claim volume does) and of the pod's three /etc files
(`pinnace.kubelet.etc_files`, each a file mount) over its own writable layer (what it writes
elsewhere, gone when it restarts); the image's own files are not modelled. A subPath mount of a
file is that file alone at its mount path. A written file keeps its last `KEPT_BYTES` in memory
(what `cat` shows of a longer one), and counts every byte written (what `tail -F` follows).
"""

from __future__ import annotations

import builtins
import fnmatch
import json
import posixpath
import re
from collections.abc import Callable, Container, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pinnace.kubelet.environment import ConfigError, expand, resource_field_value
from pinnace.kubelet.sources import CLAIM, SOURCE_KINDS, SourceKind, SourceLookup, SourceName
from pinnace.kubelet.tokens import UNSIGNED
from pinnace.resources.lists import ResourceList
from pinnace.scheduling.volumes import claim_not_for_pod

FAILED_MOUNT = "FailedMount"
KEPT_BYTES = 64 * 1024
"""What a written file keeps in memory of its end: a container appending to a log file for
ever must not hold it all."""
_MODELLED = (
    "configMap",
    "secret",
    "downwardAPI",
    "projected",
    "persistentVolumeClaim",
    "ephemeral",
    "emptyDir",
)


class Unprocessed(str):
    """Why the desired state of world populator could not take a volume (a claim that is
    missing, being deleted or not bound): no event of its own; the pod's sync times out."""


_SUBSCRIPT = re.compile(r"metadata\.(labels|annotations)\['(.*)'\]")

Files = dict[str, str]
"""Path relative to the volume -> content."""


class WritableFiles(dict[str, str]):
    """The files of an emptyDir volume or a container's writable layer: containers write them.
    `sizes` counts what was written to each file in all, of which the content keeps the end."""

    __slots__ = ("sizes",)  # a node keeps two or three for each pod (its /etc files, layers)

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, int] = {}

    def write(self, relative: str, text: str, append: bool) -> None:
        content = self.get(relative, "") + text if append else text
        self[relative] = content[-KEPT_BYTES:]
        self.sizes[relative] = (self.sizes.get(relative, 0) if append else 0) + len(text)

    def size(self, relative: str) -> int:
        """What was written to a file in all (its length if it was never written)."""
        return self.sizes.get(relative, len(self[relative]))

    def remove(self, relative: str) -> None:
        """The file, or every file below the directory, gone."""
        prefix = relative + "/" if relative else ""
        for path in [p for p in self if p == relative or p.startswith(prefix)]:
            del self[path]
            self.sizes.pop(path, None)


class Subdirectory(Mapping[str, str]):
    """The files below `directory` of writable files, live: what a subPath mount of an
    emptyDir shows, a bind mount of the directory, so what the container writes there goes
    into the volume."""

    def __init__(self, files: WritableFiles, directory: str) -> None:
        self._files = files
        self._prefix = directory + "/"

    def __getitem__(self, relative: str) -> str:
        return self._files[self._prefix + relative]

    def __iter__(self) -> Iterator[str]:
        n = len(self._prefix)
        return (path[n:] for path in self._files if path.startswith(self._prefix))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def write(self, relative: str, text: str, append: bool) -> None:
        self._files.write(self._prefix + relative, text, append)

    def size(self, relative: str) -> int:
        return self._files.size(self._prefix + relative)

    def remove(self, relative: str) -> None:
        self._files.remove(self._prefix + relative)


class MountedFile(Mapping[str, str]):
    """One file of writable files, live, bind-mounted at a path of its own (its relative path
    there is ""): what the kubelet's /etc/hosts and the sandbox's /etc/hostname and
    /etc/resolv.conf are to a container, so a write goes to the pod's file, not the layer."""

    def __init__(self, files: WritableFiles, name: str) -> None:
        self._files = files
        self._name = name

    def __getitem__(self, relative: str) -> str:
        if relative:
            raise KeyError(relative)
        return self._files[self._name]

    def __iter__(self) -> Iterator[str]:
        return iter(("",) if self._name in self._files else ())

    def __len__(self) -> int:
        return 1 if self._name in self._files else 0

    def write(self, relative: str, text: str, append: bool) -> None:
        self._files.write(self._name, text, append)

    def size(self, relative: str) -> int:
        return self._files.size(self._name)

    def remove(self, relative: str) -> None:
        self._files.remove(self._name)


class ReadOnly(Mapping[str, str]):
    """Writable files seen through a read-only mount (`readOnly: true`): read live, never
    written."""

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = files

    def __getitem__(self, relative: str) -> str:
        return self._files[relative]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)


_WRITABLE = (WritableFiles, Subdirectory, MountedFile)


def _nothing() -> None:
    pass


@dataclass
class Filesystem:
    """A container's files: (mount path, files) pairs, the later mount winning where two
    overlap. The files of a volume are the pod's live ones, updated in place; `before_read`
    brings them up to date before each look at them (the simulated mode's token refreshes,
    `PodVolumes.renew_tokens`)."""

    mounts: list[tuple[str, Mapping[str, str]]] = field(default_factory=list)
    before_read: Callable[[], None] = _nothing

    def _resolve(self, path: str) -> tuple[Mapping[str, str], str] | None:
        self.before_read()
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
        if failed is None and found is not None and isinstance(found[0], _WRITABLE):
            found[0].write(found[1], text, append)
        return failed

    def remove(self, path: str) -> None:
        """Remove a file, or a directory and what is in it, from writable files (`rm -r`)."""
        found = self._resolve(path)
        if found is not None and isinstance(found[0], _WRITABLE):
            found[0].remove(found[1])

    def cannot_write(self, path: str) -> str | None:
        """Why a file cannot be written (busybox sh's error), None if it can."""
        found = self._resolve(path)
        if found is None or (found[1] not in found[0] and (not found[1] or self.is_dir(path))):
            return f"sh: can't create {path}: Is a directory"
        if not self.writable(path):
            return f"sh: can't create {path}: Read-only file system"
        return None

    def writable(self, path: str) -> bool:
        """Whether `path` is on writable files (the layer, an emptyDir or a claim)."""
        found = self._resolve(path)
        return found is not None and isinstance(found[0], _WRITABLE)

    def size(self, path: str) -> int | None:
        """How many bytes were written to a file in all (its length if it was never written);
        None when there is no such file."""
        found = self._resolve(path)
        if found is None or found[1] not in found[0]:
            return None
        files, relative = found
        return files.size(relative) if isinstance(files, _WRITABLE) else len(files[relative])

    def is_dir(self, path: str) -> bool:
        return self.list(path) is not None and self.read(path) is None

    def list(self, path: str) -> list[str] | None:
        """What `ls` prints for `path`: the sorted names in a directory, the path of a file;
        None when there is nothing there."""
        found = self._resolve(path)  # brings the files up to date
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
        self.before_read()
        parts = _absolute(pattern).split("/")
        found: set[str] = set()
        for mount, files in self.mounts:
            for relative in files:
                path = (mount.rstrip("/") + "/" + relative).rstrip("/").split("/")
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


Allocatable = Callable[[], ResourceList]
"""The node's allocatable, asked only for a resourceFieldRef of a limit not set."""


def downward_files(items: Any, pod: Mapping[str, Any], allocatable: Allocatable) -> Files | str:
    """The files of a downwardAPI volume or projection (the downwardAPI plugin's CollectData):
    each item's fieldRef, as the kubelet formats it (a map one `key="value"` line per key,
    sorted), or its resourceFieldRef's value; why not, for a resource it cannot give."""
    files: Files = {}
    for item in items or ():
        path = posixpath.normpath(item.get("path", ""))
        field_path = (item.get("fieldRef") or {}).get("fieldPath")
        if field_path:
            files[path] = _pod_field(pod, field_path)
        elif item.get("resourceFieldRef") is not None:
            try:
                files[path] = resource_field_value(item["resourceFieldRef"], pod, {}, allocatable)
            except ConfigError as e:
                return str(e)
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


TokenSource = Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[str, str]]
"""(pod, serviceAccountToken projection) -> (token, "") to mount, ("", why) when the mount
fails, ("", "") while the token is on its way (`TokenManager.token`)."""
FirstToken = Callable[[Mapping[str, Any], Mapping[str, Any]], str]
"""(pod, serviceAccountToken projection) -> the pod's first token, signed
(`TokenManager.first_token`)."""


def no_tokens(pod: Mapping[str, Any], projection: Mapping[str, Any]) -> tuple[str, str]:
    return "", "failed to fetch token: no API server to ask"


def _projected_payload(
    volume: Mapping[str, Any],
    pod: Mapping[str, Any],
    lookup: SourceLookup,
    tokens: TokenSource,
    allocatable: Allocatable,
) -> Files | str | None:
    """The projected volume's sources in order, later files replacing earlier ones; the
    errors of every source that fails, together; None while a token is awaited."""
    files: Files = {}
    errors: list[str] = []
    waiting = False
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    for source in (volume.get("projected") or {}).get("sources") or ():
        payload: Files | str = {}
        for kind in SOURCE_KINDS:
            if source.get(kind.volume) is not None:
                projection = source[kind.volume]
                found = lookup(kind, namespace, projection.get("name", ""))
                payload = source_payload(kind, projection, found)
        if source.get("downwardAPI") is not None:
            payload = downward_files(source["downwardAPI"].get("items"), pod, allocatable)
        if source.get("serviceAccountToken") is not None:
            projection = source["serviceAccountToken"]
            token, why = tokens(pod, projection)
            payload = why or {posixpath.normpath(projection.get("path", "")): token}
            waiting = waiting or not (token or why)
        if isinstance(payload, str):
            errors.append(payload)
        else:
            files.update(payload)
    if errors:
        return errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return None if waiting else files


def claim_payload(
    name: str, pod: Mapping[str, Any], lookup: SourceLookup, ephemeral: bool = False
) -> Files | str:
    """A claim's volume (a persistentVolumeClaim volume's, or an `ephemeral` volume's, which
    must be the pod's): an empty directory once the claim is bound (getPVCExtractPV)."""
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    claim = lookup(CLAIM, namespace, name)
    prefix = f"error processing PVC {namespace}/{name}"
    if claim is None:
        reason = f'failed to fetch PVC from API server: persistentvolumeclaims "{name}" not found'
        return Unprocessed(f"{prefix}: {reason}")
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return Unprocessed(f"{prefix}: can't start pod because PVC is being deleted")
    if (claim.get("status") or {}).get("phase") != "Bound":
        return Unprocessed(f"{prefix}: PVC is not bound")
    not_for_pod = claim_not_for_pod(pod, claim) if ephemeral else None
    if not_for_pod:
        return Unprocessed(not_for_pod)
    return WritableFiles()


def volume_payload(
    volume: Mapping[str, Any],
    pod: Mapping[str, Any],
    lookup: SourceLookup,
    tokens: TokenSource,
    allocatable: Allocatable,
) -> Files | str | None:
    """The files of one of the volumes Pinnace models, or why its mount fails; None while a
    token it holds is awaited. An emptyDir's, and a bound claim's, are new `WritableFiles`:
    what the containers write there."""
    if volume.get("emptyDir") is not None:
        return WritableFiles()
    if volume.get("persistentVolumeClaim") is not None:
        return claim_payload(volume["persistentVolumeClaim"].get("claimName", ""), pod, lookup)
    if volume.get("ephemeral") is not None:
        return claim_payload(_ephemeral_claim(pod, volume), pod, lookup, ephemeral=True)
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    for kind in SOURCE_KINDS:
        source = volume.get(kind.volume)
        if source is not None:
            found = lookup(kind, namespace, source.get(kind.volume_name, ""))
            return source_payload(kind, source, found)
    if volume.get("downwardAPI") is not None:
        return downward_files(volume["downwardAPI"].get("items"), pod, allocatable)
    return _projected_payload(volume, pod, lookup, tokens, allocatable)


def _ephemeral_claim(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> str:
    return f"{(pod.get('metadata') or {}).get('name')}-{volume.get('name')}"


def _holds_token(volume: Mapping[str, Any]) -> bool:
    sources = (volume.get("projected") or {}).get("sources") or ()
    return any(source.get("serviceAccountToken") is not None for source in sources)


def _reads_labels(volume: Mapping[str, Any]) -> bool:
    """Whether a downwardAPI item of the volume (or of its projection) holds the pod's labels
    or annotations, which may change while it runs."""
    sources = [volume, *((volume.get("projected") or {}).get("sources") or ())]
    return any(
        str((item.get("fieldRef") or {}).get("fieldPath", "")).startswith(_CHANGING_FIELDS)
        for source in sources
        for item in (source.get("downwardAPI") or {}).get("items") or ()
    )


_CHANGING_FIELDS = ("metadata.labels", "metadata.annotations")


def _labels_of(pod: Mapping[str, Any]) -> tuple[Any, Any]:
    m = pod["metadata"]
    return m.get("labels"), m.get("annotations")


def _modelled(volume: Mapping[str, Any]) -> bool:
    return any(volume.get(field) is not None for field in _MODELLED)


def _source_names(pod: Mapping[str, Any], volume: Mapping[str, Any]) -> set[SourceName]:
    sources = [volume, *((volume.get("projected") or {}).get("sources") or ())]
    names = set()
    claim = volume.get("persistentVolumeClaim")
    if claim is not None:
        names.add((CLAIM.resource, claim.get("claimName", "")))
    if volume.get("ephemeral") is not None:
        names.add((CLAIM.resource, _ephemeral_claim(pod, volume)))
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

    __slots__ = (
        "_labels_seen",
        "files",
        "follows_labels",
        "mounted",
        "sources",
        "unprocessed",
    )  # thousands a pool

    def __init__(self, pod: Mapping[str, Any]) -> None:
        self.sources: dict[str, Mapping[str, Any]] = {
            v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or () if _modelled(v)
        }
        self.files: dict[str, Files] = {}
        """The volumes set up so far."""
        self.mounted = not self.sources
        """Every volume has been set up: the containers may start."""
        self.unprocessed: list[str] = []
        """The names of the claim volumes that cannot be set up yet."""
        self.follows_labels = any(_reads_labels(v) for v in self.sources.values())
        """A downwardAPI file holds the pod's labels or annotations: an update of the pod that
        changes them sets it up again (`follow_labels`; the downwardAPI plugin requires a
        remount at every pod sync, and only these files can differ)."""
        self._labels_seen: tuple[Any, Any] | None = None
        """The labels and annotations the files were last set up with."""

    @classmethod
    def of(cls, pod: Mapping[str, Any]) -> PodVolumes:
        """The pod's: one that nothing changes, shared, for every pod without modelled
        volumes."""
        volumes = cls(pod)
        return volumes if volumes.sources else _NO_VOLUMES

    def empty_dir_used_bytes(self) -> dict[str, int]:
        """What was written into each emptyDir volume set up so far, by volume name."""
        used = {}
        for name, files in self.files.items():
            if isinstance(files, WritableFiles) and self.sources[name].get("emptyDir") is not None:
                used[name] = sum(map(files.size, files))
        return used

    def source_names(self, pod: Mapping[str, Any]) -> set[SourceName]:
        """The ConfigMaps, Secrets and claims the volumes of `pod` (theirs) read."""
        return set().union(*(_source_names(pod, v) for v in self.sources.values()))

    def mount(
        self,
        pod: Mapping[str, Any],
        lookup: SourceLookup,
        tokens: TokenSource,
        allocatable: Allocatable,
        waiting: Container[str] = (),
    ) -> dict[str, str]:
        """Set up (or bring up to date) every volume but those `waiting` (their back-off);
        the FailedMount message of each that fails. A volume that fails, waits, or waits for
        a token, keeps the files it had."""
        self.unprocessed = []
        if self.follows_labels:
            self._labels_seen = _labels_of(pod)
        trying = {n: v for n, v in self.sources.items() if n not in waiting}
        failures = self._set_up(trying, pod, lookup, tokens, allocatable)
        self.mounted = len(self.files) == len(self.sources)
        return failures

    def follow_labels(
        self,
        pod: Mapping[str, Any],
        lookup: SourceLookup,
        tokens: TokenSource,
        allocatable: Allocatable,
    ) -> list[str]:
        """Set up again the volumes set up so far whose downwardAPI files hold the pod's labels
        or annotations, when these changed since; the FailedMount messages of those that fail.
        A status write's echo changes neither, and costs a comparison."""
        seen = _labels_of(pod)
        if not self.follows_labels or seen == self._labels_seen:
            return []
        self._labels_seen = seen
        following = {n: v for n, v in self.sources.items() if n in self.files and _reads_labels(v)}
        return list(self._set_up(following, pod, lookup, tokens, allocatable).values())

    def renew_tokens(
        self,
        pod: Mapping[str, Any],
        lookup: SourceLookup,
        tokens: TokenSource,
        first_token: FirstToken,
        allocatable: Allocatable,
    ) -> None:
        """Set up again the volumes set up so far that hold a service account token, with the
        token `tokens` has now. One that fails to be set up keeps its files, but for the
        stand-in of a first token not signed when it was set up (the simulated mode's): that
        becomes `first_token`, as the live mode wrote the token signed."""
        for name, volume in self.sources.items():
            holds = name in self.files and _holds_token(volume)
            if holds and self._set_up({name: volume}, pod, lookup, tokens, allocatable):
                self._sign_stand_ins(self.files[name], volume, pod, first_token)

    @staticmethod
    def _sign_stand_ins(
        files: Files, volume: Mapping[str, Any], pod: Mapping[str, Any], first_token: FirstToken
    ) -> None:
        for source in (volume.get("projected") or {}).get("sources") or ():
            projection = source.get("serviceAccountToken")
            if projection is not None:
                path = posixpath.normpath(projection.get("path", ""))
                if files.get(path) == UNSIGNED:
                    files[path] = first_token(pod, projection)

    def _set_up(
        self,
        volumes: Mapping[str, Mapping[str, Any]],
        pod: Mapping[str, Any],
        lookup: SourceLookup,
        tokens: TokenSource,
        allocatable: Allocatable,
    ) -> dict[str, str]:
        failures = {}
        for volume, source in volumes.items():
            payload = volume_payload(source, pod, lookup, tokens, allocatable)
            if isinstance(payload, Unprocessed):
                self.unprocessed.append(volume)
                continue
            if payload is None:
                continue
            if isinstance(payload, str):
                failures[volume] = f'MountVolume.SetUp failed for volume "{volume}" : {payload}'
                continue
            if isinstance(payload, WritableFiles):
                self.files.setdefault(volume, payload)  # what the containers wrote stays
                continue
            files = self.files.setdefault(volume, {})
            if files != payload:
                files.clear()
                files.update(payload)
        return failures

    def filesystem(
        self,
        container: Mapping[str, Any],
        environment: Mapping[str, str],
        layer: WritableFiles,
        etc: WritableFiles,
        before_read: Callable[[], None] = _nothing,
    ) -> Filesystem:
        """The files `container` (with `environment`, what its subPathExprs expand from) sees
        through its volumeMounts and the pod's `etc` files (`pinnace.kubelet.etc_files`, each
        mounted at its own path under /etc) over `layer`, the writable layer of its run;
        `before_read` brings the volumes up to date before they are read (here too when a
        subPath mount copies them). Raises ConfigError when a mount's subPathExpr cannot be
        expanded."""
        volume_mounts = container.get("volumeMounts") or ()
        if mounts_sub_path(container):
            before_read()
        mounts: list[tuple[str, Mapping[str, str]]] = [("/", layer)]
        mounts += [(f"/etc/{name}", MountedFile(etc, name)) for name in etc]
        for mount in volume_mounts:
            # Checked for every mount, as makeMounts does, modelled volume or not.
            sub_path = mount_sub_path(mount, environment)
            name = mount.get("name", "")
            files = self.files.get(name)
            if files is None:
                continue
            path = _absolute(str(mount.get("mountPath", "")))
            mounted = _sub_path_files(files, posixpath.normpath(sub_path)) if sub_path else files
            if mount.get("readOnly") or _read_only_claim(self.sources.get(name) or {}):
                mounted = ReadOnly(mounted)
            mounts.append((path, mounted))
        return Filesystem(mounts, before_read)


def mounts_sub_path(container: Mapping[str, Any]) -> bool:
    """Whether a volumeMount of `container` takes a subPath (or a subPathExpr): only then
    do its files hold copies made when it started."""
    return any(
        m.get("subPath") or m.get("subPathExpr") for m in container.get("volumeMounts") or ()
    )


def _sub_path_files(files: Files, sub_path: str) -> Mapping[str, str]:
    """What a subPath mount of `files` shows: a directory of writable files, live; a file of
    its own ("" relative to its mount path), or the files below a directory, as they are."""
    if isinstance(files, WritableFiles) and sub_path not in files:
        return Subdirectory(files, sub_path)
    if sub_path in files:
        return {"": files[sub_path]}
    prefix = sub_path + "/"
    return {p[len(prefix) :]: c for p, c in files.items() if p.startswith(prefix)}


def _read_only_claim(volume: Mapping[str, Any]) -> bool:
    """A persistentVolumeClaim volume that every container mounts read-only."""
    return bool((volume.get("persistentVolumeClaim") or {}).get("readOnly"))


def mount_sub_path(mount: Mapping[str, Any], environment: Mapping[str, str]) -> str:
    """The path inside its volume a mount takes ("" for the whole volume): its `subPath`, or
    its `subPathExpr` with `$(VAR)` references expanded from the container's environment
    (ExpandContainerVolumeMounts, then makeMounts' checks). Raises ConfigError with the
    kubelet's message when a variable it names is unset or empty, or when the path is
    absolute or steps back."""
    expression = mount.get("subPathExpr") or ""
    if not expression:
        return str(mount.get("subPath") or "")
    missing: set[str] = set()

    def value(name: str) -> str:
        found = environment.get(name, "")
        if not found:
            missing.add(name)
        return found

    sub_path = expand(expression, value)
    if missing:
        raise ConfigError(f"missing value for {', '.join(sorted(missing))}")
    if sub_path.startswith("/"):
        raise ConfigError(f"error SubPath `{sub_path}` must not be an absolute path")
    if ".." in sub_path.split("/"):
        raise ConfigError(f"unable to provision SubPath `{sub_path}`: must not contain '..'")
    return sub_path


_NO_VOLUMES = PodVolumes({})
