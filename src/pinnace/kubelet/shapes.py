"""Pod shapes: what the node agent works out of a pod's spec, some of its annotations and its
QoS class alone (its usage ceiling, its effective requests, its containers' cgroup settings and
models) is worked out once for all the pods of a template, and remembered by the shape's text
(`shape_key`).

The pods of a template differ in their names, uids and labels, which none of that reads, in
the name of their own kube-api-access volume (the ServiceAccount admission's random suffix),
which each of their containers mounts, and often in some annotations (a Job's completion index,
a trace's own figures): the shape leaves out the volumes and the containers' mounts, as none of
that reads them either, the node's name (the same for every pod a node runs), and the
annotations but those the function reads (`ShapeMemo`'s `annotations`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from typing import Any, TypeVar

from pinnace.api.objects import Remembered, Shared, plain_json

T = TypeVar("T")

AnnotationFilter = Callable[[str], bool]
"""Whether an annotation, by name, is one a function of the shape reads."""

_NOT_READ = ("volumes", "nodeName")
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def no_annotations(name: str) -> bool:
    return False


def shape_key(
    pod: Mapping[str, Any], annotations: AnnotationFilter = no_annotations
) -> bytes | None:
    """The plain JSON text of the pod's shape (None when it cannot be written): the
    `annotations` it has, its spec but for its volumes, its containers' mounts and its node,
    and its status's QoS class. Two pods of one shape are alike to every function of it that
    reads no other annotation."""
    m, spec, status = pod.get("metadata"), pod.get("spec"), pod.get("status") or {}
    # Dicts, as decoded: anything else is not remembered (nor worth the checks' time).
    if type(m) is not dict or type(spec) is not dict or type(status) is not dict:
        return None
    given = m.get("annotations") if annotations is not no_annotations else None
    read = {k: v for k, v in given.items() if annotations(k)} if given else {}
    shape = spec.copy()
    for name in _NOT_READ:
        shape.pop(name, None)
    for kind in _CONTAINER_LISTS:
        items = spec.get(kind)
        if type(items) is list:
            shape[kind] = [_unmounted(c) for c in items]
    return plain_json((read, shape, status.get("qosClass")))


def _unmounted(container: Any) -> Any:
    if type(container) is dict and "volumeMounts" in container:
        container = container.copy()
        del container["volumeMounts"]
    return container


class ShapeMemo(Remembered[T]):
    """The answers of a function of a pod's shape, of the `annotations` it reads (none by
    default), and of `extra` (what else it reads), by shape: the most recently used `size`."""

    def __init__(self, size: int, annotations: AnnotationFilter = no_annotations) -> None:
        super().__init__(size)
        # The pods of a workload carry a few annotation names: each is asked about once.
        self._annotations = (
            annotations if annotations is no_annotations else Shared(annotations, 4096).__getitem__
        )

    def of(self, pod: Mapping[str, Any], work: Callable[[], T], *extra: Hashable) -> T:
        """`work()`'s answer for the pod, worked out at the first pod of its shape."""
        key = shape_key(pod, self._annotations)
        if key is None:
            return work()
        full = (key, *extra) if extra else key
        answer = self.get(full)
        if answer is None:
            answer = work()
            self.put(full, answer)
        return answer
