"""Subresources and admission as a client of the in-process API server sees them: binding,
eviction against PodDisruptionBudgets, scale, logs, quota, limit ranges, priority, tolerations
and cascading namespace deletion."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.options import LogOptions, WriteOptions
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError
from pinnace.apiserver.binding import bind
from pinnace.apiserver.eviction import evict
from pinnace.apiserver.logs import log_text
from pinnace.apiserver.scale import read_scale, update_scale
from pinnace.cluster import ClusterOptions

PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
QUOTAS = catalog.kind("", "resourcequotas")
LIMIT_RANGES = catalog.kind("", "limitranges")
CONFIGMAPS = catalog.kind("", "configmaps")
DEPLOYMENTS = catalog.kind("apps", "deployments")
PDBS = catalog.kind("policy", "poddisruptionbudgets")
PRIORITY_CLASSES = catalog.kind("scheduling.k8s.io", "priorityclasses")


def pod(name: str, cpu: str = "", memory: str = "", **spec: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if cpu or memory:
        requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
        resources = {"requests": requests}
    container = {"name": "app", "image": "nginx:1.27", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [container], **spec},
    }


def binding(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def refused(api: Any, fn: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as e:
        api.call(fn, *args)
    return e.value


def make_running(api: Any, name: str, ready: bool = True) -> None:
    def running(p: dict[str, Any]) -> dict[str, Any]:
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        p["status"] = {**p.get("status", {}), "phase": "Running", "conditions": conditions}
        return p

    api.call(api.server.modify, PODS, "default", name, running, subresource="status")


# --- binding ---------------------------------------------------------------------------------


def test_binding_sets_the_node_and_the_scheduled_condition(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("web"))
    assert api.call(bind, api.server, "default", "web", binding("web", "node-1"))["status"] == (
        "Success"
    )
    bound = api.call(api.server.get, PODS, "default", "web")
    assert bound["spec"]["nodeName"] == "node-1"
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled and scheduled[0]["status"] == "True"


def test_binding_an_assigned_pod_is_409(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("web"))
    api.call(bind, api.server, "default", "web", binding("web", "node-1"))
    e = refused(api, bind, api.server, "default", "web", binding("web", "node-2"))
    assert e.code == 409
    assert e.message == (
        'Operation cannot be fulfilled on pods/binding "web": '
        'pod web is already assigned to node "node-1"'
    )


def test_binding_a_missing_pod_is_404(api: Any) -> None:
    e = refused(api, bind, api.server, "default", "ghost", binding("ghost", "node-1"))
    assert e.code == 404


def test_binding_a_gated_pod_is_409(api: Any) -> None:
    gates = [{"name": "example.com/wait"}]
    api.call(api.server.create, PODS, "default", pod("web", schedulingGates=gates))
    e = refused(api, bind, api.server, "default", "web", binding("web", "node-1"))
    assert e.code == 409
    assert e.message == (
        'Operation cannot be fulfilled on pods/binding "web": '
        "pod web has non-empty .spec.schedulingGates"
    )
    assert "nodeName" not in api.call(api.server.get, PODS, "default", "web")["spec"]


def test_the_bindings_uid_and_resource_version_are_preconditions(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod("web")).obj
    uid, rv = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    stale = binding("web", "node-1")
    stale["metadata"].update(uid="0000-other", resourceVersion=rv)
    e = refused(api, bind, api.server, "default", "web", stale)
    assert e.code == 409
    assert e.message == (
        'Operation cannot be fulfilled on pods "web": StorageError: invalid object, Code: 4, '
        "Key: /registry/pods/default/web, ResourceVersion: 0, AdditionalErrorMsg: "
        f"Precondition failed: UID in precondition: 0000-other, UID in object meta: {uid}"
    )
    stale["metadata"].update(uid=uid, resourceVersion="1")
    e = refused(api, bind, api.server, "default", "web", stale)
    assert e.message.endswith(
        f"ResourceVersion in precondition: 1, ResourceVersion in object meta: {rv}"
    )
    # The legacy POST .../bindings wipes the Binding's uid as any create's handler does.
    stale["metadata"].update(uid="0000-other", resourceVersion=rv)
    api.call(bind, api.server, "default", "", stale)
    assert api.call(api.server.get, PODS, "default", "web")["spec"]["nodeName"] == "node-1"


def test_binding_replaces_the_pod_scheduled_condition_in_place(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("web"))

    def unschedulable(p: dict[str, Any]) -> dict[str, Any]:
        p["status"] = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/1 nodes are available",
                    "lastTransitionTime": "2020-01-01T00:00:00Z",
                },
                {"type": "example.com/Ready", "status": "True"},
            ],
        }
        return p

    api.call(api.server.modify, PODS, "default", "web", unschedulable, subresource="status")
    api.call(bind, api.server, "default", "web", binding("web", "node-1"))
    conditions = api.call(api.server.get, PODS, "default", "web")["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["PodScheduled", "example.com/Ready"]
    assert conditions[0] == {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": api.server.clock.now_rfc3339(),
    }


def test_dry_run_binding_changes_nothing(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("web"))
    api.call(bind, api.server, "default", "web", binding("web", "n"), WriteOptions(dry_run=True))
    assert "nodeName" not in api.call(api.server.get, PODS, "default", "web")["spec"]


# --- eviction --------------------------------------------------------------------------------


def eviction(name: str) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}


def budget(api: Any, allowed: int) -> None:
    api.call(
        api.server.create,
        PDBS,
        "default",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        },
    )

    def counted(b: dict[str, Any]) -> dict[str, Any]:
        b["status"] = {
            "observedGeneration": b["metadata"]["generation"],
            "disruptionsAllowed": allowed,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
        }
        return b

    api.call(api.server.modify, PDBS, "default", "web", counted, subresource="status")


def test_eviction_spends_the_budget_then_refuses_with_429(api: Any) -> None:
    for name in ("a", "b"):
        api.call(api.server.create, PODS, "default", pod(name))
        make_running(api, name)
    budget(api, allowed=1)
    assert api.call(evict, api.server, "default", "a", eviction("a"))["status"] == "Success"
    spent = api.call(api.server.get, PDBS, "default", "web")
    assert spent["status"]["disruptionsAllowed"] == 0
    assert "a" in spent["status"]["disruptedPods"]
    e = refused(api, evict, api.server, "default", "b", eviction("b"))
    assert e.code == 429
    assert e.message == "Cannot evict pod as it would violate the pod's disruption budget."
    assert e.details and e.details["causes"][0]["reason"] == "DisruptionBudget"
    api.call(api.server.get, PODS, "default", "b")  # still there


def test_a_pod_two_budgets_select_cannot_be_evicted(api: Any) -> None:
    """A 500, as finishRequest makes of EvictionREST's Failure Status: not a success."""
    api.call(api.server.create, PODS, "default", pod("a"))
    make_running(api, "a")
    budget(api, allowed=1)
    second = {
        "metadata": {"name": "also"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    api.call(api.server.create, PDBS, "default", second)
    e = refused(api, evict, api.server, "default", "a", eviction("a"))
    assert (e.code, e.reason) == (500, "")
    assert e.message == (
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
        "not support."
    )
    api.call(api.server.get, PODS, "default", "a")  # still there


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {**eviction("a"), "metadata": [None, None]},
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "array into Go struct field Eviction.metadata of type v1.ObjectMeta",
        ),
        (
            {**eviction("a"), "deleteOptions": {"preconditions": "x"}},
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "string into Go struct field DeleteOptions.deleteOptions.preconditions of type "
            "v1.Preconditions",
        ),
    ],
)
def test_an_eviction_that_does_not_decode_is_a_400(api: Any, body: Any, message: str) -> None:
    api.call(api.server.create, PODS, "default", pod("a"))
    e = refused(api, evict, api.server, "default", "a", body)
    assert (e.code, e.reason, e.message) == (400, "BadRequest", message)
    api.call(api.server.get, PODS, "default", "a")  # still there


def test_a_policy_v1beta1_eviction_is_served_as_v1(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("a"))
    body = {**eviction("a"), "apiVersion": "policy/v1beta1"}
    assert api.call(evict, api.server, "default", "a", body)["status"] == "Success"


def test_pending_pods_are_evicted_regardless_of_budgets(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("a"))
    budget(api, allowed=0)
    api.call(evict, api.server, "default", "a", eviction("a"))
    assert refused(api, api.server.get, PODS, "default", "a").code == 404


def test_an_evicted_pod_is_marked_as_a_disruption_target_before_it_goes(api: Any) -> None:
    # bound to a node, so deleting it is graceful and the marked pod can be read
    api.call(api.server.create, PODS, "default", pod("a", nodeName="node-1"))
    make_running(api, "a", ready=False)
    budget(api, allowed=0)  # an unready pod may go while enough healthy ones remain
    api.call(evict, api.server, "default", "a", eviction("a"))
    marked = api.call(api.server.get, PODS, "default", "a")
    assert marked["metadata"]["deletionTimestamp"]
    [target] = [c for c in marked["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
        "lastTransitionTime": target["lastTransitionTime"],
    }
    # a dry run marks nothing
    api.call(api.server.create, PODS, "default", pod("b", nodeName="node-1"))
    make_running(api, "b", ready=False)
    api.call(evict, api.server, "default", "b", eviction("b"), ["All"])
    untouched = api.call(api.server.get, PODS, "default", "b")
    assert [c["type"] for c in untouched["status"]["conditions"]] == ["Ready"]


def test_an_eviction_for_another_pod_of_the_name_marks_nothing(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("a", nodeName="node-1"))
    make_running(api, "a")
    body = {**eviction("a"), "deleteOptions": {"preconditions": {"uid": "other"}}}
    e = refused(api, evict, api.server, "default", "a", body)
    assert e.code == 409
    assert "the UID in the precondition (other) does not match" in e.message
    pod_a = api.call(api.server.get, PODS, "default", "a")
    assert [c["type"] for c in pod_a["status"]["conditions"]] == ["Ready"]


@pytest.mark.parametrize(
    ("query", "body", "same"),
    [
        (["All"], ["All"], True),
        ([], ["All"], True),
        (["All"], [], True),
        (["All"], ["All", "All"], False),
        (["All", "All"], ["All"], False),
    ],
)
def test_an_eviction_whose_dry_runs_differ_is_refused(
    api: Any, query: list[str], body: list[str], same: bool
) -> None:
    # EvictionREST's propagateDryRun: a plain error, which the handler answers as a 500
    # without a reason.
    api.call(api.server.create, PODS, "default", pod("a"))
    request = {**eviction("a"), "deleteOptions": {"dryRun": body}}
    if same:
        api.call(evict, api.server, "default", "a", request, query)
        assert api.call(api.server.get, PODS, "default", "a")["metadata"]["name"] == "a"
        return
    e = refused(api, evict, api.server, "default", "a", request, query)
    message = "Non-matching dry-run options in request and content: "
    message += f"[{' '.join(query)}] and [{' '.join(body)}]"
    assert (e.code, e.reason, e.message) == (500, "", message)
    assert api.call(api.server.get, PODS, "default", "a")["metadata"]["name"] == "a"


def test_eviction_name_must_match_the_url(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("a"))
    e = refused(api, evict, api.server, "default", "a", eviction("b"))
    assert (e.code, e.message) == (400, "name in URL does not match name in Eviction object")


# --- scale -----------------------------------------------------------------------------------


def deployment() -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }


def test_scale_reads_and_writes_spec_replicas(api: Any) -> None:
    api.call(api.server.create, DEPLOYMENTS, "default", deployment())
    scale = api.call(read_scale, api.server, DEPLOYMENTS, "default", "web")
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 2}
    assert scale["status"]["selector"] == "app=web"
    wanted = {**scale, "spec": {"replicas": 5}}
    written = api.call(update_scale, api.server, DEPLOYMENTS, "default", "web", lambda _: wanted)
    assert written.obj["spec"] == {"replicas": 5}
    stored = api.call(api.server.get, DEPLOYMENTS, "default", "web")
    assert stored["spec"]["replicas"] == 5
    assert stored["metadata"]["generation"] == 2


def test_negative_scale_is_422_and_a_stale_scale_is_409(api: Any) -> None:
    api.call(api.server.create, DEPLOYMENTS, "default", deployment())
    scale = api.call(read_scale, api.server, DEPLOYMENTS, "default", "web")
    negative = {**scale, "spec": {"replicas": -1}}
    e = refused(api, update_scale, api.server, DEPLOYMENTS, "default", "web", lambda _: negative)
    assert e.code == 422
    assert e.message == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: '
        "must be greater than or equal to 0"
    )
    api.call(update_scale, api.server, DEPLOYMENTS, "default", "web", lambda s: s)
    api.call(
        update_scale,
        api.server,
        DEPLOYMENTS,
        "default",
        "web",
        lambda s: {**s, "spec": {"replicas": 3}},
    )
    stale = {**scale, "spec": {"replicas": 4}}
    e = refused(api, update_scale, api.server, DEPLOYMENTS, "default", "web", lambda _: stale)
    assert e.code == 409


# --- logs ------------------------------------------------------------------------------------


def test_logs_are_empty_until_bound_then_come_from_the_node_agent(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("web"))
    assert api.call(log_text, api.server, "default", "web", LogOptions()) == ""

    async def source(p: dict[str, Any], container: str, options: LogOptions) -> Any:
        yield f"{p['spec']['nodeName']}/{container}: hello\n"

    api.server.log_source = source
    api.call(bind, api.server, "default", "web", binding("web", "node-1"))
    assert api.call(log_text, api.server, "default", "web", LogOptions()) == "node-1/app: hello\n"
    e = refused(api, log_text, api.server, "default", "web", LogOptions(container="nope"))
    assert e.code == 400


# --- admission -------------------------------------------------------------------------------


def test_quota_counts_pods_and_refuses_with_403(api: Any) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "1", "requests.cpu": "1"}},
    }
    api.call(api.server.create, QUOTAS, "default", quota)
    api.call(api.server.create, PODS, "default", pod("a", cpu="500m"))
    used = api.call(api.server.get, QUOTAS, "default", "q")["status"]["used"]
    assert used == {"pods": "1", "requests.cpu": "500m"}
    e = refused(api, api.server.create, PODS, "default", pod("b", cpu="100m"))
    assert e.code == 403
    assert e.message == (
        'pods "b" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1'
    )
    api.call(api.server.delete, PODS, "default", "a")
    used = api.call(api.server.get, QUOTAS, "default", "q")["status"]["used"]
    assert used == {"pods": "0", "requests.cpu": "0"}
    api.call(api.server.create, PODS, "default", pod("b", cpu="100m"))


def test_quota_on_requests_needs_pods_to_state_them(api: Any) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"requests.memory": "1Gi"}},
    }
    api.call(api.server.create, QUOTAS, "default", quota)
    e = refused(api, api.server.create, PODS, "default", pod("a"))
    assert e.code == 403
    assert e.message == (
        'pods "a" is forbidden: failed quota: q: must specify requests.memory for: app'
    )


def test_limit_range_defaults_requests_and_limits(api: Any) -> None:
    limits = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults"},
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": "500m", "memory": "256Mi"},
                    "defaultRequest": {"cpu": "100m", "memory": "128Mi"},
                    "max": {"memory": "1Gi"},
                }
            ]
        },
    }
    api.call(api.server.create, LIMIT_RANGES, "default", limits)
    created = api.call(api.server.create, PODS, "default", pod("a")).obj
    resources = created["spec"]["containers"][0]["resources"]
    assert resources == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "100m", "memory": "128Mi"},
    }
    assert created["status"]["qosClass"] == "Burstable"
    big = pod("b")
    big["spec"]["containers"][0]["resources"] = {"limits": {"memory": "2Gi"}}
    e = refused(api, api.server.create, PODS, "default", big)
    assert e.code == 403
    assert "maximum memory usage per Container is 1Gi, but limit is 2Gi" in e.message


def test_priority_class_sets_priority_and_unknown_class_is_refused(api: Any) -> None:
    critical = pod("a", priorityClassName="system-node-critical")
    created = api.call(api.server.create, PODS, "default", critical).obj
    assert created["spec"]["priority"] == 2000001000
    assert created["spec"]["preemptionPolicy"] == "PreemptLowerPriority"
    e = refused(api, api.server.create, PODS, "default", pod("b", priorityClassName="gold"))
    assert e.code == 403
    assert e.message == 'pods "b" is forbidden: no PriorityClass with name gold was found'


def test_global_default_priority_class_applies_to_new_pods(api: Any) -> None:
    api.call(
        api.server.create,
        PRIORITY_CLASSES,
        "",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "normal"},
            "value": 1000,
            "globalDefault": True,
        },
    )
    created = api.call(api.server.create, PODS, "default", pod("a")).obj
    assert created["spec"]["priorityClassName"] == "normal"
    assert created["spec"]["priority"] == 1000


def test_pods_get_the_default_not_ready_and_unreachable_tolerations(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod("a")).obj
    tolerations = {t["key"]: t for t in created["spec"]["tolerations"]}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        assert tolerations[key] == {
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }


# --- namespace deletion ----------------------------------------------------------------------


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_deleting_a_namespace_deletes_its_content_then_the_namespace() -> None:
    cluster = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    server = cluster.server
    try:
        cluster.run(server.create(NAMESPACES, "", namespace("team")))
        cluster.run(server.create(PODS, "team", pod("a")))
        # A finalizer holds the namespace in Terminating for as long as the test needs it.
        held = {"name": "c", "finalizers": ["example.com/hold"]}
        cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": held}
        cluster.run(server.create(CONFIGMAPS, "team", cm))
        cluster.run(server.delete(NAMESPACES, "", "team"))
        terminating = cluster.run(server.get(NAMESPACES, "", "team"))
        assert terminating["status"]["phase"] == "Terminating"
        with pytest.raises(StatusError) as e:
            cluster.run(server.create(PODS, "team", pod("late")))
        assert e.value.code == 403
        assert "because it is being terminated" in e.value.message
        cluster.wait(50)  # the namespace controller, which every cluster runs, empties it
        with pytest.raises(StatusError) as pod_gone:
            cluster.run(server.get(PODS, "team", "a"))
        assert pod_gone.value.code == 404
        assert cluster.run(server.get(NAMESPACES, "", "team"))["status"]["phase"] == "Terminating"
        release = {"metadata": {"finalizers": None}}
        cluster.run(server.patch(CONFIGMAPS, "team", "c", PatchType.MERGE, release))
        cluster.wait(50)
        for kind, namespace_name, name in (
            (NAMESPACES, "", "team"),
            (PODS, "team", "a"),
            (CONFIGMAPS, "team", "c"),
        ):
            with pytest.raises(StatusError) as gone:
                cluster.run(server.get(kind, namespace_name, name))
            assert gone.value.code == 404
    finally:
        cluster.close()


def test_system_namespaces_cannot_be_deleted(api: Any) -> None:
    e = refused(api, api.server.delete, NAMESPACES, "", "kube-system")
    assert e.code == 403
    assert e.message == 'namespaces "kube-system" is forbidden: this namespace may not be deleted'


def test_no_binding_in_a_terminating_or_missing_namespace() -> None:
    """NamespaceLifecycle admits a Binding as any create: 403 while its namespace terminates
    (`pods` through the subresource, `bindings` through the legacy POST), before the name
    check; 404 for a namespace that does not exist."""
    cluster = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    server = cluster.server
    try:
        cluster.run(server.create(NAMESPACES, "", namespace("team")))
        kept = pod("a")  # its finalizer keeps the namespace terminating
        kept["metadata"]["finalizers"] = ["example.com/keep"]
        cluster.run(server.create(PODS, "team", kept))
        cluster.run(server.delete(NAMESPACES, "", "team"))
        why = "unable to create new content in namespace team because it is being terminated"
        for url_name, resource in (("a", "pods"), ("", "bindings"), ("other", "pods")):
            with pytest.raises(StatusError) as e:
                cluster.run(bind(server, "team", url_name, binding("a", "node-1")))
            assert e.value.code == 403
            assert e.value.message == f'{resource} "a" is forbidden: {why}'
        assert "nodeName" not in cluster.run(server.get(PODS, "team", "a"))["spec"]
        with pytest.raises(StatusError) as e:
            cluster.run(bind(server, "nowhere", "a", binding("a", "node-1")))
        assert (e.value.code, e.value.message) == (404, 'namespaces "nowhere" not found')
    finally:
        cluster.close()


def test_no_eviction_in_a_terminating_namespace() -> None:
    """NamespaceLifecycle admits an Eviction as any create: 403 with the NamespaceTerminating
    cause (which kubectl drain takes as the pod going anyway), and the pod is not marked."""
    cluster = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    server = cluster.server
    try:
        cluster.run(server.create(NAMESPACES, "", namespace("team")))
        kept = pod("a")
        kept["metadata"]["finalizers"] = ["example.com/keep"]
        cluster.run(server.create(PODS, "team", kept))
        cluster.run(server.delete(NAMESPACES, "", "team"))
        with pytest.raises(StatusError) as e:
            cluster.run(evict(server, "team", "a", eviction("a")))
        assert e.value.code == 403
        assert e.value.message == (
            'pods "a" is forbidden: unable to create new content in namespace team because it '
            "is being terminated"
        )
        assert e.value.details and e.value.details["causes"][0]["reason"] == (
            "NamespaceTerminating"
        )
        stored = cluster.run(server.get(PODS, "team", "a"))
        conditions = (stored.get("status") or {}).get("conditions") or ()
        assert "DisruptionTarget" not in {c["type"] for c in conditions}
    finally:
        cluster.close()
