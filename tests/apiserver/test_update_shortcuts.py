"""An update or a patch decodes the new object against the stored one (`normalize`'s `basis`):
a part with the stored part's JSON text is taken as stored instead of walked again, and a
patch's parts left alone stay the stored ones themselves (`share`). Over many generated
updates of a bound, running pod (its status as a kubelet writes it, its metadata and spec as
controllers and users change them) and of a Lease, the API server with that shortcut and one
that decodes every new object in full store the same bytes and refuse with the same errors
(code, reason, message and causes), write after write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api import decode as decoding
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.apiserver import server
from pinnace.apiserver.keys import object_key

PODS = catalog.kind("", "pods")
LEASES = catalog.kind("coordination.k8s.io", "leases")


def _full_decode(obj: Any, kind: Any, **options: Any) -> decoding.Decoded:
    """`decode` without the stored object: every part walked and copied."""
    options.pop("basis", None)
    options.pop("share", None)
    return decoding.decode(obj, kind, **options)


TIMES = st.sampled_from(
    [
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:05Z",
        "2025-01-01T01:00:00+01:00",  # the same moment, not in canonical form
        "2025-01-01T00:00:00.000000Z",
        "not a time",
        None,
        7,
    ]
)
CONDITION_TYPES = st.sampled_from(
    ["Ready", "ContainersReady", "PodScheduled", "example.com/gate", "not a type!", 3]
)
IPS = st.sampled_from(["10.1.0.5", "10.1.0.6", "fd00::5", "", "10.1.0", None, 5])
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, "", "x", "250m"])
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(strategy, SCALARS)


condition = st.fixed_dictionaries(
    {"type": CONDITION_TYPES, "status": st.sampled_from(["True", "False", "Unknown"])},
    optional={
        "lastTransitionTime": TIMES,
        "lastProbeTime": TIMES,
        "reason": st.sampled_from(["", "PodCompleted", None]),
        "message": st.sampled_from(["", "ok"]),
        "unknownField": SCALARS,
    },
)
state = st.sampled_from(
    [
        {"running": {"startedAt": "2025-01-01T00:00:01Z"}},
        {"running": {"startedAt": "2025-01-01T01:00:01+01:00"}},
        {"waiting": {"reason": "CrashLoopBackOff", "message": ""}},
        {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2025-01-01T00:00:09Z"}},
        {"terminated": {"exitCode": 1.0}},
        {},
    ]
)
container_status = st.fixed_dictionaries(
    {"name": st.sampled_from(["app", "other"])},
    optional={
        "state": _maybe(state),
        "lastState": _maybe(state),
        "ready": _maybe(st.booleans()),
        "restartCount": _maybe(st.integers(0, 5)),
        "image": st.sampled_from(["nginx", ""]),
        "imageID": st.sampled_from(["", "docker.io/library/nginx@sha256:abc"]),
        "started": _maybe(st.booleans()),
        "containerID": st.sampled_from(["", "containerd://abc"]),
        "allocatedResources": _maybe(st.just({"cpu": "0.1"})),
    },
)
pod_status = st.fixed_dictionaries(
    {},
    optional={
        "phase": st.sampled_from(["Pending", "Running", "Failed", ""]),
        "conditions": _maybe(st.lists(condition, max_size=4)),
        "hostIP": IPS,
        "hostIPs": _maybe(st.lists(st.fixed_dictionaries({"ip": IPS}), max_size=2)),
        "podIP": IPS,
        "podIPs": _maybe(st.lists(st.fixed_dictionaries({"ip": IPS}), max_size=3)),
        "startTime": TIMES,
        "containerStatuses": _maybe(st.lists(container_status, max_size=2)),
        "qosClass": st.sampled_from(["Burstable", "BestEffort", None]),
        "nominatedNodeName": st.sampled_from(["node-2", "Bad_Name", None]),
        "reason": st.sampled_from(["Evicted", "", None]),
        "resize": st.sampled_from(["Proposed", None]),
        "unknownField": SCALARS,
    },
)
pod_metadata = st.fixed_dictionaries(
    {},
    optional={
        "labels": _maybe(st.dictionaries(st.sampled_from(["app", "tier", "bad key!"]), SCALARS)),
        "annotations": _maybe(
            st.dictionaries(st.sampled_from(["note", "example.com/x"]), st.sampled_from(["a", ""]))
        ),
        "finalizers": _maybe(st.lists(st.sampled_from(["example.com/keep", "bad//"]), max_size=2)),
        "uid": st.sampled_from(["00000000-0000-0000-0000-000000000000", None]),
        "generation": _maybe(st.integers(0, 3)),
        "creationTimestamp": TIMES,
        "unknownField": SCALARS,
    },
)
pod_spec = st.fixed_dictionaries(
    {},
    optional={
        "activeDeadlineSeconds": _maybe(st.integers(-1, 100)),
        "nodeName": st.sampled_from(["node-1", "node-2"]),
        "terminationGracePeriodSeconds": _maybe(st.integers(0, 60)),
        "tolerations": _maybe(
            st.lists(
                st.fixed_dictionaries(
                    {"key": st.sampled_from(["a", "b"]), "operator": st.just("Exists")},
                    optional={"tolerationSeconds": _maybe(st.integers(0, 9))},
                ),
                max_size=2,
            )
        ),
        "containers": _maybe(
            st.lists(
                st.fixed_dictionaries(
                    {"name": st.just("app"), "image": st.sampled_from(["nginx", "nginx:2", ""])},
                    optional={"resources": _maybe(st.just({"requests": {"cpu": "0.1"}}))},
                ),
                max_size=2,
            )
        ),
        "unknownField": SCALARS,
    },
)
lease_spec = st.fixed_dictionaries(
    {},
    optional={
        "holderIdentity": _maybe(st.sampled_from(["node-1", "node-2"])),
        "leaseDurationSeconds": _maybe(st.integers(-1, 60)),
        "renewTime": st.sampled_from(
            ["2025-01-01T00:00:10.000000Z", "2025-01-01T01:00:10.5+01:00", "2025-01-01T00:00:10Z"]
        ),
        "leaseTransitions": _maybe(st.integers(-1, 3)),
        "unknownField": SCALARS,
    },
)

Write = tuple[str, Any]
writes: st.SearchStrategy[Write] = st.one_of(
    st.tuples(st.just("status"), st.fixed_dictionaries({"status": pod_status})),
    st.tuples(
        st.just("status"),
        st.fixed_dictionaries({"metadata": pod_metadata, "status": pod_status}),
    ),
    st.tuples(st.just("pod"), st.fixed_dictionaries({"metadata": pod_metadata})),
    st.tuples(st.just("pod"), st.fixed_dictionaries({"spec": pod_spec})),
    st.tuples(st.just("strategic"), st.fixed_dictionaries({"spec": pod_spec})),
    st.tuples(st.just("put"), st.fixed_dictionaries({"status": pod_status})),
    st.tuples(st.just("put"), st.fixed_dictionaries({"metadata": pod_metadata})),
    st.tuples(st.just("lease"), lease_spec),
)


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "nodeName": "node-1",
            "containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
            ],
        },
    }


def _lease() -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "node-1", "namespace": "default"},
        "spec": {"holderIdentity": "node-1", "renewTime": "2025-01-01T00:00:00.000000Z"},
    }


def _merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """`base` with `change`'s fields put in, one level down (a PUT of a changed object)."""
    out = dict(base)
    for key, value in change.items():
        part = out.get(key)
        both = isinstance(part, dict) and isinstance(value, dict)
        out[key] = {**part, **value} if both else value
    return out


def _run(writes: list[Write]) -> list[Any]:
    """What each write gives on a fresh server: the stored pod's and Lease's text, or the
    refusal."""
    api = Harness()
    outcomes: list[Any] = []
    try:
        pod = api.call(api.server.create, PODS, "default", _pod()).obj
        lease = api.call(api.server.create, LEASES, "default", _lease()).obj
        for what, body in writes:
            outcomes.append(_outcome(api, _write(api, what, body, pod, lease)))
            pod = api.call(api.server.store.get, object_key(PODS, "default", "web"))
            lease = api.call(api.server.store.get, object_key(LEASES, "default", "node-1"))
            outcomes.append(orjson.dumps([pod, lease]))
    finally:
        api.loop.close()
        asyncio.set_event_loop(None)
    return outcomes


def _write(api: Harness, what: str, body: Any, pod: Any, lease: Any) -> Callable[[], Any]:
    s = api.server
    if what == "status":
        return lambda: s.patch(PODS, "default", "web", PatchType.MERGE, body, subresource="status")
    if what == "pod":
        return lambda: s.patch(PODS, "default", "web", PatchType.MERGE, body)
    if what == "strategic":
        return lambda: s.patch(PODS, "default", "web", PatchType.STRATEGIC_MERGE, body)
    if what == "put":
        subresource = "status" if "status" in body else ""
        new = _merged(pod, body)
        return lambda: s.update(PODS, "default", "web", new, subresource=subresource)
    renewed = {**lease, "spec": body}
    return lambda: s.update(LEASES, "default", "node-1", renewed)


def _outcome(api: Harness, write: Callable[[], Any]) -> Any:
    try:
        result = api.run(write())
    except StatusError as e:
        return (e.code, e.reason, e.message, orjson.dumps(e.details))
    return (orjson.dumps(result.obj), result.warnings)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(writes, min_size=1, max_size=6))
def test_updates_store_and_refuse_as_a_full_decode_does(writes: list[Write]) -> None:
    shortcut = _run(writes)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(server, "decode", _full_decode)
        full = _run(writes)
    assert shortcut == full
