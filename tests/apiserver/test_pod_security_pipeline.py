"""PodSecurity as the API server runs it: a namespace's policy follows its labels from the very
next write, whatever pods were judged under the labels before."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType

PODS = catalog.kind("", "pods")
NAMESPACES = catalog.kind("", "namespaces")
DEPLOYMENTS = catalog.kind("apps", "deployments")
ENFORCE = "pod-security.kubernetes.io/enforce"
WARN = "pod-security.kubernetes.io/warn"


def host_pid_pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"hostPID": True, "containers": [{"name": "app", "image": "nginx:1.27"}]},
    }


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": host_pid_pod(name)["spec"]},
        },
    }


def label(client: LocalClient, labels: dict[str, str | None]) -> Any:
    patch = {"metadata": {"labels": labels}}
    return client.patch(NAMESPACES, "", "team", patch, PatchType.MERGE)


def test_labelling_a_namespace_applies_to_its_next_pod_and_unlabelling_lifts_it(api: Any) -> None:
    client = LocalClient(api.server)
    api.call(client.create, NAMESPACES, "", {"metadata": {"name": "team"}})
    api.call(client.create, PODS, "team", host_pid_pod("before"))
    api.call(label, client, {ENFORCE: "baseline"})
    with pytest.raises(StatusError) as refused:
        api.call(client.create, PODS, "team", host_pid_pod("during"))
    assert refused.value.code == 403
    assert 'violates PodSecurity "baseline:latest": host namespaces (hostPID=true)' in str(
        refused.value
    )
    api.call(label, client, {ENFORCE: None})
    api.call(client.create, PODS, "team", host_pid_pod("after"))


def test_a_warn_label_added_later_warns_of_the_next_template(api: Any) -> None:
    api.call(api.server.create, NAMESPACES, "", {"metadata": {"name": "team"}})
    quiet = api.call(api.server.create, DEPLOYMENTS, "team", deployment("quiet"))
    assert quiet.warnings == []
    api.call(label, LocalClient(api.server), {WARN: "baseline"})
    warned = api.call(api.server.create, DEPLOYMENTS, "team", deployment("warned"))
    assert warned.warnings == [
        'would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)'
    ]


def test_a_pods_status_is_written_whatever_its_namespaces_policy(api: Any) -> None:
    """PodSecurity ignores pods/status (its kubelet's writes): a pod the enforce policy would
    refuse now has its status written without a warning, while a change to its spec is
    judged."""
    client = LocalClient(api.server)
    api.call(client.create, NAMESPACES, "", {"metadata": {"name": "team"}})
    api.call(client.create, PODS, "team", host_pid_pod("before"))
    api.call(label, client, {ENFORCE: "baseline", WARN: "baseline"})
    status = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    written = api.call(
        api.server.patch, PODS, "team", "before", PatchType.MERGE, status, None, "status"
    )
    assert written.warnings == []
    assert written.obj["status"]["phase"] == "Running"
    image = {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}
    with pytest.raises(StatusError) as refused:
        api.call(api.server.patch, PODS, "team", "before", PatchType.STRATEGIC_MERGE, image)
    assert refused.value.code == 403
