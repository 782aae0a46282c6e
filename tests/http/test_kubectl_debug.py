"""`kubectl debug` against `pinnace up`: an ephemeral container added to a running pod runs
its command on the pod's node, its output shows through the session and its logs, and an
update that removes one gets kube-apiserver's 422."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-debug"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_kubectl_debug_runs_an_ephemeral_container(cluster: Cluster) -> None:
    cluster.ok("run", "web", "--image=nginx")
    cluster.ok("wait", "--for=condition=Ready", "pod/web", "--timeout=30s")

    session = cluster.ok(
        "debug",
        "web",
        "-it",
        "--image=busybox",
        "--container=debugger",
        "--",
        "echo",
        "dbg",
        stdin="",
    )
    assert "dbg" in session.splitlines()
    assert cluster.ok("logs", "web", "-c", "debugger") == "dbg\n"
    statuses = json.loads(
        cluster.ok("get", "pod", "web", "-o", "jsonpath={.status.ephemeralContainerStatuses}")
    )
    [debugger] = statuses
    assert debugger["name"] == "debugger"
    assert debugger["state"]["terminated"]["exitCode"] == 0
    assert cluster.ok("get", "pod", "web", "-o", "jsonpath={.status.phase}") == "Running"

    removal = '[{"op": "remove", "path": "/spec/ephemeralContainers/0"}]'
    done = cluster.kubectl(
        "patch", "pod", "web", "--subresource=ephemeralcontainers", "--type=json", "-p", removal
    )
    assert done.returncode == 1
    assert done.stderr == (
        'The Pod "web" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral '
        'containers "debugger" may not be removed\n\n'
    )


def test_kubectl_debug_node_runs_a_pod_on_the_node(cluster: Cluster) -> None:
    # kubectl creates the node's debugging pod through client-go's typed client, in protobuf.
    done = cluster.ok("debug", "node/pinnace-node-1", "--image=busybox", "--", "true")
    [line] = [line for line in done.splitlines() if line.startswith("Creating debugging pod")]
    name = line.split()[3]
    spec = json.loads(cluster.ok("get", "pod", name, "-o", "jsonpath={.spec}"))
    assert spec["nodeName"] == "pinnace-node-1"
    assert (spec["hostPID"], spec["hostNetwork"], spec["hostIPC"]) == (True, True, True)
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert {"name": "host-root", "hostPath": {"path": "/", "type": ""}} in spec["volumes"]
    [debugger] = spec["containers"]
    assert debugger["command"] == ["true"]
    assert {"name": "host-root", "mountPath": "/host"} in debugger["volumeMounts"]
    cluster.ok("wait", "--for=jsonpath={.status.phase}=Succeeded", f"pod/{name}", "--timeout=30s")


def test_kubectl_debug_copy_to_copies_the_whole_pod(cluster: Cluster) -> None:
    cluster.ok(
        "run",
        "original",
        "--image=nginx",
        "--env=MODE=debug",
        "--overrides",
        json.dumps(
            {
                "spec": {
                    "volumes": [{"name": "scratch", "emptyDir": {}}],
                    "containers": [
                        {
                            "name": "original",
                            "image": "nginx",
                            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                            "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                            "securityContext": {"runAsUser": 101},
                        }
                    ],
                }
            }
        ),
    )
    cluster.ok(
        "debug",
        "original",
        "--copy-to=original-copy",
        "--image=busybox",
        "--container=debugger",
        "--share-processes",
        "--",
        "sleep",
        "1d",
    )
    original = json.loads(cluster.ok("get", "pod", "original", "-o", "jsonpath={.spec}"))
    copy = json.loads(cluster.ok("get", "pod", "original-copy", "-o", "jsonpath={.spec}"))
    assert copy["shareProcessNamespace"] is True
    assert [c["name"] for c in copy["containers"]] == ["original", "debugger"]
    assert copy["containers"][0] == original["containers"][0]
    assert copy["volumes"] == original["volumes"]
