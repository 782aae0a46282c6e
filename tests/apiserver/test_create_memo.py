"""The pods of one template, created one after another: each is stored, refused and warned
about exactly as if it were the only pod of its spec, though the API server remembers what its
pipeline made of the template (`pinnace.apiserver.create_memo`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import orjson
import pytest
from tests.support import acting_as

from pinnace.api import catalog
from pinnace.api.objects import clone
from pinnace.api.options import WriteOptions
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.pod_security_levels import Configuration
from pinnace.apiserver.auth.user import UserInfo
from pinnace.apiserver.bootstrap import bootstrap
from pinnace.apiserver.create_memo import Made
from pinnace.apiserver.server import APIServer, Result
from pinnace.client.interface import PatchType
from pinnace.clock import Clock, Randomness, VirtualEventLoop
from pinnace.store import MemoryStore

T = TypeVar("T")
PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
LIMIT_RANGES = catalog.kind("", "limitranges")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")
RESOURCE_QUOTAS = catalog.kind("", "resourcequotas")
RUNTIME_CLASSES = catalog.kind("node.k8s.io", "runtimeclasses")
ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"


class Cluster:
    """An API server with the ServiceAccount plugin, namespace `a` and its default account."""

    def __init__(self) -> None:
        self.loop = VirtualEventLoop()
        self.clock = Clock(self.loop)
        self.server = APIServer(MemoryStore(), self.clock, Randomness(7), service_accounts=True)
        self.run(bootstrap(self.server))
        self.run(self.server.create(NAMESPACES, "", {"metadata": {"name": "a"}}))
        self.run(self.server.create(SERVICE_ACCOUNTS, "a", {"metadata": {"name": "default"}}))

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def create(self, body: dict[str, Any], options: WriteOptions | None = None) -> Result:
        return self.run(self.server.create(PODS, "a", body, options))

    def refusal(self, body: dict[str, Any]) -> StatusError:
        with pytest.raises(StatusError) as e:
            self.create(body)
        return e.value

    def put(self, kind: Any, obj: dict[str, Any], namespace: str = "a") -> None:
        self.run(self.server.create(kind, namespace if kind.namespaced else "", obj))

    def label_namespace(self, labels: dict[str, str]) -> None:
        async def label() -> None:
            ns = clone(await self.server.get(NAMESPACES, "", "a"))
            ns["metadata"]["labels"] = {**ns["metadata"].get("labels", {}), **labels}
            await self.server.update(NAMESPACES, "", "a", ns)

        self.run(label())

    def close(self) -> None:
        self.loop.close()
        asyncio.set_event_loop(None)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    yield made
    made.close()


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}, "uid": "from-the-client"},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1.27", "resources": {"requests": {"cpu": "100m"}}}
            ],
            **spec,
        },
    }


def generated(base: str, **spec: Any) -> dict[str, Any]:
    body = pod("", **spec)
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = base
    return body


def simulated(name: str, run_seconds: str, cpu: str) -> dict[str, Any]:
    """A pod as a generator makes it: its draws in its behaviour annotations."""
    body = pod(name)
    body["metadata"]["annotations"] = {
        "team": "batch",
        "sim.pinnace.dev/run-seconds": run_seconds,
        "sim.pinnace.dev/cpu": cpu,
    }
    return body


LIMIT = 256 * 1024
"""Validation's limit on the total size of a pod's annotations."""
FILLS_THE_LIMIT = "x" * (
    LIMIT - sum(map(len, simulated("", "1", "")["metadata"]["annotations"])) - 6
)
"""A cpu draw that, with a run time of "1", fills the limit with the annotations a request has."""


def _writes(cluster: Cluster) -> list[tuple[str, Any]]:
    """A sequence of creates of a few templates, with changes to what admission reads between
    them and the clock moving on, and what each answered."""
    answers: list[tuple[str, Any]] = []

    def create(body: dict[str, Any], options: WriteOptions | None = None) -> None:
        try:
            result = cluster.create(body, options)
            answers.append(("created", (result.obj, result.warnings)))
        except StatusError as e:
            answers.append(("refused", (e.code, e.reason, str(e), e.details)))
        cluster.run(asyncio.sleep(0.6))

    for i in range(4):
        create(pod(f"web-{i}"))
        create(generated("job-"))
        create(pod(f"managed-{i}"), WriteOptions(field_manager="kubectl-create"))
        create(pod(f"dry-{i}"), WriteOptions(dry_run=True))
        create(pod(f"web-{i}"))  # taken
        create(pod(f"bad.name-{i}"))
        create(pod(f"init-{i}", initContainers=[{"name": "setup", "image": "busybox"}]))
        create(pod(f"own-{i}", serviceAccountName="builder"))
        # Served from the third of a template on: draws alike, equal ones, one equal to the
        # name, one found elsewhere in the pod (its request), one that fills the annotations'
        # size limit (over it once LimitRanger adds its note), one over it.
        draws = [(f"{60 * i + 1}", f"{i + 2}50m"), (f"{60 * i + 2}", f"{i + 2}70m")]
        draws += [("5", "5"), ("6", "6"), (f"{60 * i + 3}", f"{i + 2}80m"), ("7", "7")]
        draws += [("9", f"sim-{i}-6"), ("100m", "3"), ("1", FILLS_THE_LIMIT), ("1", "x" * LIMIT)]
        for n, (run_seconds, cpu) in enumerate(draws):
            create(simulated(f"sim-{i}-{n}", run_seconds, cpu))
        for uid in ("", None):
            body = pod(f"uid-{uid}-{i}".lower())
            body["metadata"]["uid"] = uid
            create(body)
        if i == 1:
            cluster.put(
                LIMIT_RANGES,
                {
                    "metadata": {"name": "defaults"},
                    "spec": {"limits": [{"type": "Container", "default": {"memory": "1Gi"}}]},
                },
            )
            cluster.put(SERVICE_ACCOUNTS, {"metadata": {"name": "builder"}})
            cluster.put(
                RESOURCE_QUOTAS,
                {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "60", "cpu": "20"}}},
            )
        if i == 2:
            cluster.put(
                PRIORITY_CLASSES, {"metadata": {"name": "high"}, "value": 9, "globalDefault": True}
            )
            cluster.label_namespace({WARN: "restricted"})
    return answers


def test_each_pod_of_a_template_is_made_as_if_it_were_the_only_one(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = 0
    instance = Made.instance

    def counted(self: Made, *args: Any) -> dict[str, Any]:
        nonlocal served
        served += 1
        return instance(self, *args)

    monkeypatch.setattr(Made, "instance", counted)
    remembered = _writes(cluster)
    stored = [cluster.run(cluster.server.list(kind, "a")) for kind in (PODS, RESOURCE_QUOTAS)]
    alone = Cluster()
    try:
        monkeypatch.setattr(alone.server._create_memo, "recall", lambda template: None)
        # as JSON text: the same fields in the same order
        assert orjson.dumps(_writes(alone)) == orjson.dumps(remembered)
        alone_stored = [alone.run(alone.server.list(kind, "a")) for kind in (PODS, RESOURCE_QUOTAS)]
        assert orjson.dumps(alone_stored) == orjson.dumps(stored)
    finally:
        alone.close()
    created = [answer[0] for kind, answer in remembered if kind == "created"]
    assert len([obj for obj in created if obj["metadata"]["name"].startswith("job-")]) == 4
    simulated = [
        obj["metadata"]["name"] for obj in created if obj["metadata"]["name"][:4] == "sim-"
    ]
    # refused: the annotations over the size limit, and those that fill it once LimitRanger
    # adds its note (from the third round on)
    assert len(simulated) == 4 * 10 - 4 - 2
    assert {"sim-0-8", "sim-1-8"} <= set(simulated)
    assert served >= 4 * 5


def test_the_pods_of_a_generator_are_made_from_its_template(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[str] = []
    made_from = APIServer._create_from

    async def counted(self: APIServer, kind: Any, namespace: str, template: Any, *rest: Any) -> Any:
        served.append(template.name)
        return await made_from(self, kind, namespace, template, *rest)

    monkeypatch.setattr(APIServer, "_create_from", counted)
    for i in range(6):
        result = cluster.create(simulated(f"sim-{i}", f"{i * 7}.5", f"{200 + i}m"))
        assert result.obj["metadata"]["annotations"]["sim.pinnace.dev/cpu"] == f"{200 + i}m"
    assert served == [f"sim-{i}" for i in range(2, 6)]


def _volume_names(result: Result) -> list[str]:
    return [v["name"] for v in result.obj["spec"]["volumes"]]


def test_each_pod_gets_its_own_name_uid_time_and_token_volume(cluster: Cluster) -> None:
    results = []
    for _ in range(4):
        results.append(cluster.create(generated("job-")))
        cluster.run(asyncio.sleep(1))
    metas = [r.obj["metadata"] for r in results]
    assert len({m["name"] for m in metas}) == len({m["uid"] for m in metas}) == 4
    assert len({m["creationTimestamp"] for m in metas}) == 4
    volumes = [_volume_names(r) for r in results]
    assert len({v[0] for v in volumes}) == 4
    for result, (volume,) in zip(results, volumes, strict=True):
        assert result.obj["spec"]["containers"][0]["volumeMounts"][0]["name"] == volume


@pytest.mark.parametrize(
    "change, seen",
    [
        (
            lambda c: c.put(
                LIMIT_RANGES,
                {
                    "metadata": {"name": "d"},
                    "spec": {"limits": [{"type": "Container", "defaultRequest": {"memory": "1M"}}]},
                },
            ),
            lambda r: r.obj["spec"]["containers"][0]["resources"]["requests"].get("memory") == "1M",
        ),
        (
            lambda c: c.put(
                PRIORITY_CLASSES, {"metadata": {"name": "top"}, "value": 7, "globalDefault": True}
            ),
            lambda r: r.obj["spec"]["priority"] == 7,
        ),
        (
            lambda c: c.label_namespace({WARN: "restricted"}),
            lambda r: any("restricted" in w for w in r.warnings),
        ),
    ],
)
def test_a_change_to_what_admission_reads_is_seen_by_the_next_create(
    cluster: Cluster, change: Callable[[Cluster], None], seen: Callable[[Result], bool]
) -> None:
    for i in range(3):
        assert not seen(cluster.create(pod(f"before-{i}")))
    change(cluster)
    assert seen(cluster.create(pod("after")))


def test_an_enforced_policy_refuses_the_next_pod_of_a_template(cluster: Cluster) -> None:
    for i in range(3):
        cluster.create(pod(f"before-{i}"))
    cluster.label_namespace({ENFORCE: "restricted"})
    refused = cluster.refusal(pod("after"))
    assert refused.code == 403
    assert 'violates PodSecurity "restricted:latest"' in str(refused)


def test_an_account_deleted_refuses_the_next_pod_of_a_template(cluster: Cluster) -> None:
    cluster.put(SERVICE_ACCOUNTS, {"metadata": {"name": "builder"}})
    for i in range(3):
        cluster.create(pod(f"before-{i}", serviceAccountName="builder"))
    cluster.run(cluster.server.delete(SERVICE_ACCOUNTS, "a", "builder"))
    refused = cluster.refusal(pod("after", serviceAccountName="builder"))
    assert refused.code == 403
    assert 'serviceaccount "builder" not found' in str(refused)


def test_the_quota_charges_every_pod_of_a_template(cluster: Cluster) -> None:
    cluster.put(RESOURCE_QUOTAS, {"metadata": {"name": "q"}, "spec": {"hard": {"pods": "3"}}})
    for i in range(3):
        cluster.create(pod(f"p-{i}"))
    refused = cluster.refusal(pod("p-3"))
    assert refused.code == 403
    assert "exceeded quota: q" in str(refused)


def test_the_requester_decides_pod_security_exemptions(cluster: Cluster) -> None:
    cluster.server.admission.pod_security_configuration = Configuration(
        usernames=frozenset({"exempt"})
    )
    cluster.label_namespace({WARN: "restricted"})

    async def create_as(user: str, body: dict[str, Any]) -> Result:
        with acting_as(UserInfo(user)):
            return await cluster.server.create(PODS, "a", body)

    for i in range(3):
        assert cluster.run(create_as("exempt", pod(f"exempt-{i}"))).warnings == []
    assert cluster.run(create_as("someone", pod("someone"))).warnings != []


def test_the_memo_keeps_no_part_of_a_request_or_of_the_pods_the_pipeline_made(
    cluster: Cluster,
) -> None:
    """The pods the memo makes share what does not vary with each other (stored objects are
    read-only), but nothing with a caller's body or with the pods whose pipeline it learnt
    from: changing those, against the rules, leaves the next pod as it would be."""
    body = pod("first")
    first = cluster.create(body)
    second = cluster.create(pod("second"))
    for result in (first, second):
        spec = result.obj["spec"]
        spec["containers"][0]["image"] = "changed"
        spec["containers"][0]["volumeMounts"].append({"name": "x", "mountPath": "/x"})
        spec["tolerations"].clear()
        result.obj["metadata"]["labels"]["app"] = "changed"
        result.warnings.append("changed")
    body["spec"]["containers"][0]["image"] = "changed too"
    third = cluster.create(pod("third"))
    spec = third.obj["spec"]
    assert spec["containers"][0]["image"] == "nginx:1.27"
    assert len(spec["containers"][0]["volumeMounts"]) == 1
    assert spec["tolerations"]
    assert third.obj["metadata"]["labels"] == {"app": "web"}
    assert third.warnings == []


def test_a_bad_name_is_refused_for_a_remembered_template(cluster: Cluster) -> None:
    for i in range(3):
        cluster.create(pod(f"good-{i}"))
    refused = cluster.refusal(pod("Bad_Name"))
    assert refused.code == 422
    assert refused.details is not None
    assert [c["field"] for c in refused.details["causes"]] == ["metadata.name"]


def test_patching_a_pod_of_a_template_leaves_its_siblings_as_they_were(cluster: Cluster) -> None:
    """Pods the memo makes share their unchanging parts; a write to one of them through the
    API changes that pod only."""
    made = [cluster.create(pod(f"p-{i}")).obj for i in range(4)]
    before = orjson.dumps(made[3])
    patch = {
        "metadata": {"labels": {"app": "changed"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]},
    }
    patched = cluster.run(
        cluster.server.patch(PODS, "a", "p-2", PatchType.STRATEGIC_MERGE, patch)
    ).obj
    assert patched["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert patched["metadata"]["labels"] == {"app": "changed"}
    assert orjson.dumps(cluster.run(cluster.server.get(PODS, "a", "p-3"))) == before
    fifth = cluster.create(pod("p-4")).obj
    assert fifth["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert fifth["metadata"]["labels"] == {"app": "web"}
