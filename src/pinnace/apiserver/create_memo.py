"""What a pod's create pipeline made of a template, remembered: the pods of one template (a
ReplicaSet's, a Job's, a bench's, an arrivals generator's) differ in their names only, or in
their names and the values of their behaviour annotations (`BEHAVIOUR_ANNOTATION_PREFIX`: a
generator's draws of run time and usage), and decoding, defaulting, mutating admission, the
strategy's preparation, validation and PodSecurity give each of them the same object and
warnings but for the parts that are the pod's own.

A pod's own parts, which a remembered create still makes for every pod: its name (the request's,
or generated from generateName), uid, creationTimestamp, the time of its managedFields entry and
the name of its ServiceAccount token volume (`kube-api-access-<random>`, mounted in each
container), each drawn from the stream it would be drawn from, in the same order; and the values
of its behaviour annotations, which it brings. What follows the pipeline stays per create too:
ResourceQuota's charge and the store's write.

What else decides the answer is in the key (`Template.key`): the request's body but its name,
uid and behaviour annotations' values, which of those values are the same text, its namespace,
how it is decoded (strict, JSON text, the caller's own form), its field manager, and admission's
`generation` (the stored objects the plugins read, PodSecurity's configuration, the requester,
the feature gates): a write to any of those objects makes the next create work the pipeline out
again.

A template is remembered only where nothing per pod can change the answer, which `template` and
`remember` check: the name is a good DNS label (so each pod's passes the same checks and has no
warning of its own), and the pod's own values appear in the object where they are put and
nowhere else, nor in a warning. A pod is made from it only when its behaviour annotations'
values fit validation's limit on the total size of the annotations as admission leaves them
(`Made.fits`: the only check that reads those values). A create that fails in the pipeline is never
remembered: a template's error is worked out again, as its wording names the pod. (One that
passes the pipeline and then fails on its quota charge or a name taken is remembered: the memo
holds only what the pipeline made, which the charge and the write do not change.)

Each pod is a new object that shares with the memo every part the pod's own values are not
in (its containers' resources, its tolerations, its status...): stored objects are read-only
(`pinnace.store.interface`), so what pods share nobody changes, and a pod costs a few small dicts
instead of a parse of the whole template. The memo's object is its own, parsed from the
pipeline's, never the first pod's stored object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from pinnace.api.core.pod import BEHAVIOUR_ANNOTATION_PREFIX
from pinnace.api.meta import TOTAL_ANNOTATION_SIZE_LIMIT_BYTES, annotations_size
from pinnace.api.names import GENERATE_NAME_MAX_BASE, NAME_SUFFIX_ALPHABET, is_good_dns1123_label
from pinnace.api.objects import Object, Remembered, alike, plain_json
from pinnace.apiserver.admission.service_account import VOLUME_PREFIX, is_mirror_pod, token_volume

_SUFFIX_STAND_IN = NAME_SUFFIX_ALPHABET[0] * 5
"""A generated name's random suffix, for checking its base: every suffix is 5 lowercase
letters and digits, so the names of one base are all good DNS labels, or none is."""
_CONTAINER_LISTS = ("initContainers", "containers")


class Template(NamedTuple):
    """A create request as the memo knows it."""

    key: Hashable
    name: str
    """The request's name, or "" for one generated from its generateName."""
    annotations: dict[str, str]
    """The request's behaviour annotations, with their values."""


@dataclass(frozen=True, slots=True)
class Made:
    """What the pipeline made of a template, with the first pod's own values in it."""

    template: Object
    """The pod as the pipeline made it, shared with every pod made of it: never changed."""
    warnings: tuple[str, ...]
    generate: bool
    account: str
    """The ServiceAccount the plugin looks up for the pod ("" for a mirror pod), which decides
    its draws."""
    token_volume: int | None
    """The token volume's index in spec.volumes."""
    token_mounts: tuple[tuple[str, int, int], ...]
    """(container list, container index, mount index) of each mount of the token volume."""
    timed_entries: tuple[int, ...]
    """The managedFields entries stamped with the create's time."""
    annotation_room: int
    """The bytes validation leaves the values of the behaviour annotations: its limit on the
    annotations' total size, less the rest of what the pipeline made of them (the keys, the
    other values, and what admission added: LimitRanger's note)."""

    def fits(self, request: Template) -> bool:
        """Whether the request's behaviour annotations' values pass validation's limit."""
        return not request.annotations or _values_size(request.annotations) <= self.annotation_room

    def instance(self, request: Template, uid: str, now: str, token_volume_name: str) -> Object:
        """A new pod of the template, with its own values: new dicts and lists down to each of
        them, the rest shared."""
        template = self.template
        m = {**template["metadata"], "name": request.name, "uid": uid, "creationTimestamp": now}
        if request.annotations:
            m["annotations"] = {**m["annotations"], **request.annotations}
        if self.timed_entries:
            entries = m["managedFields"] = list(m["managedFields"])
            for i in self.timed_entries:
                entries[i] = {**entries[i], "time": now}
        obj = {**template, "metadata": m}
        if self.token_volume is not None:
            shared = template["spec"]
            spec = obj["spec"] = {**shared}
            volumes = spec["volumes"] = list(shared["volumes"])
            volumes[self.token_volume] = token_volume(token_volume_name)
            for group, ci, mi in self.token_mounts:
                containers = spec[group]
                if containers is shared[group]:
                    containers = spec[group] = list(containers)
                container = containers[ci]
                if container is shared[group][ci]:
                    mounts = list(container["volumeMounts"])
                    container = containers[ci] = {**container, "volumeMounts": mounts}
                mounts = container["volumeMounts"]
                mounts[mi] = {**mounts[mi], "name": token_volume_name}
        return obj


class CreateMemo:
    """The templates of the pods created lately, by `Template.key`; a template is remembered
    when its second pod comes, so that pods of specs seen once cost no more than a lookup."""

    def __init__(self, size: int = 256) -> None:
        self._made: Remembered[Made] = Remembered(size, only_returning=True)

    @staticmethod
    def template(body: Any, context: tuple[Hashable, ...]) -> Template | None:
        """The template of a create's request body, with `context` (the rest of what the
        answer depends on); None when its pods cannot be told apart by name alone."""
        if not isinstance(body, dict):
            return None
        m = body.get("metadata")
        if not isinstance(m, dict) or "managedFields" in m:
            return None
        name = m.get("name")
        generate_name = m.get("generateName")
        if name:
            if not isinstance(name, str) or not is_good_dns1123_label(name):
                return None
            m = {**m, "name": "-"}
        elif (
            not generate_name
            or not isinstance(generate_name, str)
            or not is_good_dns1123_label(generate_name[:GENERATE_NAME_MAX_BASE] + _SUFFIX_STAND_IN)
        ):
            return None
        else:
            name = ""
        uid = m.get("uid")
        if uid:  # any uid but "" is replaced alike (decoding leaves out an empty one)
            if not isinstance(uid, str):
                return None
            m = {**m, "uid": "-"}
        annotations = _behaviour_annotations(m.get("annotations"))
        if annotations is None:
            return None
        if annotations:
            m = {**m, "annotations": {**m["annotations"], **dict.fromkeys(annotations, "-")}}
        text = plain_json({**body, "metadata": m})
        if text is None or VOLUME_PREFIX.encode() in text:
            return None
        same = alike([name, *annotations.values()]) if annotations else ()
        return Template((text, same, *context), name, annotations)

    def recall(self, template: Template) -> Made | None:
        made = self._made.get(template.key)
        return made if made is not None and made.fits(template) else None

    def remember(self, template: Template, obj: Object, warnings: list[str], now: str) -> None:
        """Remember what the pipeline made of `template`: `obj` as it is to be stored, made at
        `now`."""
        if not self._made.returning(template.key):
            return
        made = _made(template, obj, warnings, now)
        if made is not None:
            self._made.put(template.key, made)


def _behaviour_annotations(annotations: Any) -> dict[str, str] | None:
    """The behaviour annotations of a request's annotations, with their values; None when one
    is not a string (a stand-in would hide it)."""
    if not annotations or not isinstance(annotations, dict):
        return {}
    prefix = BEHAVIOUR_ANNOTATION_PREFIX
    own = {k: v for k, v in annotations.items() if isinstance(k, str) and k.startswith(prefix)}
    return own if all(type(value) is str for value in own.values()) else None


def _values_size(annotations: dict[str, str]) -> int:
    return sum(len(v.encode()) for v in annotations.values())


def _made(template: Template, obj: Object, warnings: list[str], now: str) -> Made | None:
    m = obj["metadata"]
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    annotations = m.get("annotations") or {}
    if any(annotations.get(key) != value for key, value in template.annotations.items()):
        return None  # moved
    # validated: every value a string, and their size within the limit
    used = annotations_size(annotations) - _values_size(template.annotations)
    token = _token_volume(spec)
    if token is None:
        return None
    volume_index, volume_name, token_mounts = token
    entries = m.get("managedFields") or ()
    timed = tuple(i for i, entry in enumerate(entries) if entry.get("time") == now)
    made = {m["uid"]: 1, now: 1 + len(timed)}  # what the create makes, each its own text
    if volume_index is not None:
        made[volume_name] = 1 + len(token_mounts)
    brought = Counter([m["name"], *template.annotations.values()])
    if len(made) < 2 + (volume_index is not None) or not brought.keys().isdisjoint(made):
        return None  # two of the values the create makes are the same text, or one is brought
    text = orjson.dumps(obj)
    for value, times in {**made, **brought}.items():
        if text.count(orjson.dumps(value)) != times or any(value in w for w in warnings):
            return None
    account = "" if is_mirror_pod(obj) else spec.get("serviceAccountName")
    return Made(
        orjson.loads(text),
        tuple(warnings),
        not template.name,
        account if isinstance(account, str) else "",
        volume_index,
        token_mounts,
        timed,
        TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - used,
    )


_Token = tuple[int | None, str, tuple[tuple[str, int, int], ...]]
_NO_TOKEN: _Token = (None, "", ())


def _token_volume(spec: dict[str, Any]) -> _Token | None:
    """Where the token volume the ServiceAccount admission added is, its name and where its
    mounts are (a template that names such a volume itself is not remembered, so the one
    volume named with its prefix is that one); None when it is not as the plugin makes it."""
    volumes = spec.get("volumes") or []
    index = next(
        (i for i, v in enumerate(volumes) if v.get("name", "").startswith(VOLUME_PREFIX)), None
    )
    if index is None:
        return _NO_TOKEN
    volume_name = volumes[index]["name"]
    if volumes[index] != token_volume(volume_name):
        return None
    mounts = tuple(
        (group, ci, mi)
        for group in _CONTAINER_LISTS
        for ci, container in enumerate(spec.get(group) or ())
        for mi, mount in enumerate(container.get("volumeMounts") or ())
        if mount.get("name") == volume_name
    )
    return index, volume_name, mounts
