"""Image pulls through `pinnace up` and kubectl: the Kubernetes documentation's Deployment
rollout to `nginx:1.161`, a tag the registry does not have, gets stuck in ErrImagePull and
ImagePullBackOff, and `kubectl rollout undo` brings it back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually


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
    cluster.ok(
        "apply",
        "-f",
        "-",
        stdin="""
apiVersion: v1
kind: Pod
metadata: {name: typo}
spec:
  containers:
  - {name: app, image: "Nginx:1.27"}
""",
    )
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
