"""Images through `pinnace up` and kubectl: the Kubernetes documentation's Deployment
rollout to `nginx:1.161`, a tag the registry does not have, gets stuck in ErrImagePull and
ImagePullBackOff, and `kubectl rollout undo` brings it back; a name that is no image reference
waits with InvalidImageName; a pod's container given a new image runs it; a command a scratch
image lacks cannot start."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

STUCK = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers:
  - {{name: app, image: "Nginx:1.27"}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-images"), flags=("--nodes", "1"))
    yield running
    stop(running)


def test_a_rollout_to_a_missing_tag_is_stuck_until_undone(cluster: Cluster) -> None:
    cluster.ok("create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
    cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")

    cluster.ok("set", "image", "deployment/web", "nginx=nginx:1.161")

    def stuck() -> list[str]:
        rows = [line.split() for line in cluster.ok("get", "pods", "--no-headers").splitlines()]
        waiting = [r[2] for r in rows if r[2] in ("ErrImagePull", "ImagePullBackOff")]
        assert waiting, rows
        return waiting

    eventually(stuck)
    status = cluster.ok("rollout", "status", "deployment/web", "--watch=false")
    assert status.startswith('Waiting for deployment "web" rollout to finish')
    events = cluster.ok("get", "events", "-o", "jsonpath={range .items[*]}{.message}{'\\n'}{end}")
    assert 'Failed to pull image "nginx:1.161": rpc error: code = NotFound' in events
    eventually(
        lambda: (
            'Back-off pulling image "nginx:1.161"'
            in cluster.ok("get", "events", "-o", "jsonpath={.items[*].message}")
        )
    )

    assert cluster.ok("rollout", "undo", "deployment/web").strip() == (
        "deployment.apps/web rolled back"
    )
    status = cluster.ok("rollout", "status", "deployment/web", "--timeout=60s")
    assert status.strip().endswith('deployment "web" successfully rolled out')

    def recovered() -> bool:
        listing = cluster.ok(
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase}{'\\n'}{end}",
        )
        assert listing.split("\n")[:-1] == ["nginx:1.27 Running"] * 2, listing
        return True

    eventually(recovered)


def test_an_image_name_that_does_not_parse_waits_with_invalid_image_name(
    cluster: Cluster,
) -> None:
    """A typo kubectl run would refuse, applied from a manifest: the API server takes it, and
    the kubelet's image manager (EnsureImageExists) cannot parse it, so the container waits
    with InvalidImageName and the pod stays Pending; never pulled, never started."""
    cluster.ok("apply", "-f", "-", stdin=STUCK.format(name="typo"))
    message = (
        'Failed to apply default image tag "Nginx:1.27": couldn\'t parse image name '
        '"Nginx:1.27": invalid reference format: repository name (library/Nginx) must be '
        "lowercase"
    )

    def waiting() -> str:
        shown = cluster.ok(
            "get",
            "pod",
            "typo",
            "-o",
            "jsonpath={.status.phase} {.status.containerStatuses[0].state.waiting.reason}",
        )
        assert shown == "Pending InvalidImageName", shown
        return cluster.ok(
            "get",
            "pod",
            "typo",
            "-o",
            "jsonpath={.status.containerStatuses[0].state.waiting.message}",
        )

    assert eventually(waiting) == message
    assert cluster.ok("get", "pod", "typo", "--no-headers").split()[2] == "InvalidImageName"
    events = cluster.ok(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=typo",
        "-o",
        "jsonpath={range .items[*]}{.type} {.reason}: {.message}{'\\n'}{end}",
    )
    assert f"Warning InspectFailed: {message}" in events
    assert "Warning Failed: Error: InvalidImageName" in events
    assert "Pulling" not in events and "Started" not in events


def test_a_new_image_for_a_pods_container_is_run(cluster: Cluster) -> None:
    """The image is the one field of a pod's container an update may change. A running
    container is killed to start again from the new image (computePodActions: "definition
    changed"); one stuck on an image it cannot run takes the new one at its next try."""
    # Its sleep ignores SIGTERM: the kill takes the whole grace period, kept short here.
    short = '--overrides={"spec": {"terminationGracePeriodSeconds": 1}}'
    cluster.ok("run", "box", "--image=busybox:1.35", short, "--", "sleep", "3600")
    cluster.ok("wait", "--for=condition=Ready", "pod/box", "--timeout=30s")
    cluster.ok("set", "image", "pod/box", "box=busybox:1.36")

    def restarted() -> bool:
        shown = cluster.ok(
            "get",
            "pod",
            "box",
            "-o",
            "jsonpath={.status.containerStatuses[0].image} "
            "{.status.containerStatuses[0].restartCount} {.status.containerStatuses[0].ready}",
        )
        assert shown == "docker.io/library/busybox:1.36 1 true", shown
        return True

    eventually(restarted)
    events = cluster.ok(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=box",
        "-o",
        "jsonpath={range .items[*]}{.reason}: {.message}{'\\n'}{end}",
    )
    assert "Killing: Container box definition changed, will be restarted" in events
    assert 'Pulling: Pulling image "busybox:1.36"' in events

    cluster.ok("apply", "-f", "-", stdin=STUCK.format(name="stuck"))
    eventually(
        lambda: cluster.ok("get", "pod", "stuck", "--no-headers").split()[2] == "InvalidImageName"
    )
    cluster.ok("set", "image", "pod/stuck", "app=nginx:1.27")
    cluster.ok("wait", "--for=condition=Ready", "pod/stuck", "--timeout=30s")
    assert (
        cluster.ok(
            "get", "pod", "stuck", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"
        )
        == "0"
    )


def test_a_command_a_scratch_image_lacks_fails_to_start_as_under_containerd(
    cluster: Cluster,
) -> None:
    """registry.k8s.io/pause holds /pause alone: a `sh` command cannot start. The container
    is created, exits at once (StartError, 128, started at the Unix epoch) and crash-loops."""
    cluster.ok("run", "scratch", "--image=registry.k8s.io/pause:3.10", "--", "sh", "-c", "true")
    error = (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        'failed: runc create failed: unable to start container process: exec: "sh": '
        "executable file not found in $PATH: unknown"
    )

    def looping() -> dict[str, Any]:
        status = json.loads(cluster.ok("get", "pod", "scratch", "-o", "json"))["status"]
        (container,) = status["containerStatuses"]
        assert container["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        return dict(container)

    container = eventually(looping)
    last = container["lastState"]["terminated"]
    assert (last["reason"], last["exitCode"], last["message"]) == ("StartError", 128, error)
    assert last["startedAt"] == "1970-01-01T00:00:00Z"
    assert (container["started"], container["ready"]) == (False, False)
    events = cluster.ok(
        "get", "events", "--field-selector", "involvedObject.name=scratch", "-o", "json"
    )
    reasons = {(e["reason"], e["message"]) for e in json.loads(events)["items"]}
    assert ("Failed", f"Error: {error}") in reasons
    assert ("Created", "Created container: scratch") in reasons
    assert not any(reason == "Started" for reason, _ in reasons)
