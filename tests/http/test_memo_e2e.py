"""Objects the API server makes from a remembered template (`pinnace.apiserver.create_memo`,
`event_memo`), seen as a user sees them through `pinnace up`: pods that differ in their
behaviour annotations' values, and the kubelets' core/v1 Events, each with its own values."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

PODS = 5
POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: draw-{i}
  annotations: {{sim.pinnace.dev/run-seconds: "{run}", sim.pinnace.dev/cpu: "{cpu}m"}}
spec:
  containers:
  - name: app
    image: nginx:1.27
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-memo"), flags=("--nodes", "2"))
    yield running
    stop(running)


def test_pods_of_one_template_keep_their_own_draws_and_events(cluster: Cluster) -> None:
    draws = [(600 + i, 100 + 50 * i) for i in range(PODS)]
    manifests = "---\n".join(
        POD.format(i=i, run=run, cpu=cpu) for i, (run, cpu) in enumerate(draws)
    )
    cluster.ok("create", "-f", "-", stdin=manifests)  # no last-applied note: one template

    def running() -> list[dict] | None:
        listed = json.loads(cluster.ok("get", "pods", "-o", "json"))["items"]
        phases = [p["status"].get("phase") for p in listed]
        return listed if phases == ["Running"] * PODS else None

    pods = {p["metadata"]["name"]: p for p in eventually(running)}
    for i, (run, cpu) in enumerate(draws):
        annotations = pods[f"draw-{i}"]["metadata"]["annotations"]
        assert annotations["sim.pinnace.dev/run-seconds"] == str(run)
        assert annotations["sim.pinnace.dev/cpu"] == f"{cpu}m"
    assert len({p["metadata"]["uid"] for p in pods.values()}) == PODS

    v1 = client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))

    def started() -> list[client.CoreV1Event] | None:
        events = v1.list_namespaced_event("default", field_selector="reason=Started").items
        return events if len(events) == PODS else None

    events = eventually(started)
    assert len({e.metadata.name for e in events}) == len({e.metadata.uid for e in events}) == PODS
    for event in events:
        pod = pods[event.involved_object.name]
        node = pod["spec"]["nodeName"]
        assert event.involved_object.uid == pod["metadata"]["uid"]
        assert (event.source.component, event.source.host) == ("kubelet", node)
        assert (event.reporting_component, event.reporting_instance) == ("kubelet", node)
        assert event.first_timestamp == event.last_timestamp and event.count == 1
        assert event.message == "Started container app"
        assert event.metadata.name.startswith(f"{pod['metadata']['name']}.")
