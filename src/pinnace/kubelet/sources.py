"""The objects containers take configuration from: ConfigMaps and Secrets, as the node agent
finds them, and which ones a pod uses (`pinnace.kubelet.environment` builds environments from
them; `pinnace.kubelet.volumes` mounts them as files).

The v1.32 kubelet treats the two kinds alike (its configMap and secret managers, and volume
plugins of the same shape), each with its own wording: a missing one is `configmap "x" not
found` or `secret "x" not found` (the managers' NotFound errors), a missing key of an env
reference `couldn't find key k in ConfigMap ns/x` or `... in Secret ns/x`, a missing key of a
volume's items `configmap references non-existent config key: k` or `references non-existent
secret key: k` (MakePayload). A Secret's values are its `data`, decoded; a ConfigMap gives its
environment `data` only and its volumes `data` and `binaryData`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pinnace.api import catalog
from pinnace.api.core.secret import secret_data
from pinnace.api.objects import Object
from pinnace.client import Client, Informer

Values = Callable[[Mapping[str, Any]], dict[str, str]]


def _config_map_env(config_map: Mapping[str, Any]) -> dict[str, str]:
    return dict(config_map.get("data") or {})


def _config_map_files(config_map: Mapping[str, Any]) -> dict[str, str]:
    binary = {k: _decoded(v) for k, v in (config_map.get("binaryData") or {}).items()}
    return {**(config_map.get("data") or {}), **binary}


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value).decode(errors="replace")
    except (binascii.Error, ValueError):
        return value


def _secret_values(secret: Mapping[str, Any]) -> dict[str, str]:
    return {k: v.decode(errors="replace") for k, v in secret_data(secret).items()}


@dataclass(frozen=True, eq=False)
class SourceKind:
    """One kind of configuration source and the fields and words that go with it."""

    resource: str
    """As the kubelet's NotFound errors name it: `configmap`, `secret`."""
    kind: str
    env_ref: str
    """The `env[].valueFrom` field that takes one key."""
    env_from_ref: str
    """The `envFrom[]` field that takes every key."""
    volume: str
    """The volume source field (and the projected volume's source field)."""
    volume_name: str
    """The field of a volume source that names the object (a projection's is `name`)."""
    missing_volume_key: str
    env_values: Values
    file_values: Values

    def not_found(self, name: str) -> str:
        return f'{self.resource} "{name}" not found'


CONFIG_MAP = SourceKind(
    resource="configmap",
    kind="ConfigMap",
    env_ref="configMapKeyRef",
    env_from_ref="configMapRef",
    volume="configMap",
    volume_name="name",
    missing_volume_key="configmap references non-existent config key: {key}",
    env_values=_config_map_env,
    file_values=_config_map_files,
)
SECRET = SourceKind(
    resource="secret",
    kind="Secret",
    env_ref="secretKeyRef",
    env_from_ref="secretRef",
    volume="secret",
    volume_name="secretName",
    missing_volume_key="references non-existent secret key: {key}",
    env_values=_secret_values,
    file_values=_secret_values,
)
SOURCE_KINDS = (CONFIG_MAP, SECRET)
CLAIM = SourceKind(
    resource="persistentvolumeclaim",
    kind="PersistentVolumeClaim",
    env_ref="",
    env_from_ref="",
    volume="persistentVolumeClaim",
    volume_name="claimName",
    missing_volume_key="",
    env_values=lambda claim: {},
    file_values=lambda claim: {},
)
"""A claim is no source of configuration, but the kubelet follows it the same way: a pod's
claim volumes wait for it to be bound."""
WATCHED_KINDS = (*SOURCE_KINDS, CLAIM)

SourceLookup = Callable[[SourceKind, str, str], Mapping[str, Any] | None]
"""(kind, namespace, name) -> the ConfigMap or Secret, or None when there is none."""

SourceName = tuple[str, str]
"""(resource, name) of a source a pod uses."""
SourceKey = tuple[str, str, str]
"""(namespace, resource, name) of a source."""
FollowedChanged = Callable[[SourceKey, bool], None]
"""(source, followed): whether pods of a node now follow the source's changes."""


def no_sources(kind: SourceKind, namespace: str, name: str) -> None:
    return None


def source_key(kind: SourceKind, source: Mapping[str, Any]) -> SourceKey:
    m = source["metadata"]
    return m.get("namespace") or "", kind.resource, m.get("name") or ""


def _env_references(pod: Mapping[str, Any]) -> Iterator[SourceName]:
    spec = pod.get("spec") or {}
    for containers in ("initContainers", "containers"):
        for c in spec.get(containers) or ():
            for source in c.get("envFrom") or ():
                for kind in SOURCE_KINDS:
                    if source.get(kind.env_from_ref):
                        yield kind.resource, source[kind.env_from_ref].get("name", "")
            for env in c.get("env") or ():
                value_from = env.get("valueFrom") or {}
                for kind in SOURCE_KINDS:
                    if value_from.get(kind.env_ref):
                        yield kind.resource, value_from[kind.env_ref].get("name", "")


def referenced_sources(pod: Mapping[str, Any]) -> set[SourceName]:
    """The ConfigMaps and Secrets the pod's containers take environment from."""
    return set(_env_references(pod))


SourceChanged = Callable[[SourceKind, Mapping[str, Any]], None]


class SourceInformers:
    """The ConfigMaps, Secrets and claims a node agent (or a pool of them) looks up, each kind
    in an informer's cache, with `changed` called for every one added or updated."""

    def __init__(self, client: Client, changed: SourceChanged) -> None:
        self._informers = {k.resource: Informer(client, _KINDS[k.resource]) for k in WATCHED_KINDS}
        for kind in WATCHED_KINDS:
            self._informers[kind.resource].add_event_handler(
                partial(changed, kind), partial(_updated, changed, kind)
            )

    def lookup(self, kind: SourceKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._informers[kind.resource].get(namespace, name)

    async def start(self) -> None:
        """Start, and return once each cache holds what the API has."""
        for informer in self._informers.values():
            informer.start()
        for informer in self._informers.values():
            await informer.wait_for_sync()

    async def stop(self) -> None:
        for informer in self._informers.values():
            await informer.stop()


def _updated(changed: SourceChanged, kind: SourceKind, old: Object, new: Object) -> None:
    changed(kind, new)


_KINDS = {
    "configmap": catalog.kind("", "configmaps"),
    "secret": catalog.kind("", "secrets"),
    "persistentvolumeclaim": catalog.kind("", "persistentvolumeclaims"),
}
