"""Image pulls that take time, as `pinnace up --config` models them for a pool with an
`imagePullBandwidth` (docs/nodes.md, "Images"), seen through kubectl: a pod's image changed
while the old one is still being pulled starts from the new one, pulled first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

# nginx is some 72 MB: a pull takes about 7 s at 10 MB a second.
CLUSTER = """
apiVersion: pinnace.dev/v1alpha1
kind: Cluster
nodePools:
- name: slow
  count: 1
  capacity: {cpu: "4", memory: 8Gi}
  imagePullBandwidth: 10M
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  nodeName: slow-1
  containers:
  - {name: app, image: "nginx:1.26"}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-slow-pulls")
    (workdir / "cluster.yaml").write_text(CLUSTER)
    running = launch(workdir, flags=("--config", "cluster.yaml"))
    yield running
    stop(running)


def events(cluster: Cluster, reason: str) -> list[str]:
    listing = cluster.ok(
        "get",
        "events",
        "--field-selector",
        f"involvedObject.name=web,reason={reason}",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "jsonpath={range .items[*]}{.message}{'\\n'}{end}",
    )
    return listing.splitlines()


def test_an_image_changed_during_its_pull_is_pulled_before_the_container_starts(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=POD)
    eventually(lambda: events(cluster, "Pulling") == ['Pulling image "nginx:1.26"'])
    shown = cluster.ok("get", "pod", "web", "--no-headers").split()
    assert shown[2] == "ContainerCreating", shown
    cluster.ok("set", "image", "pod/web", "app=nginx:1.27")
    cluster.ok("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    status = cluster.ok(
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.status.containerStatuses[0].image} {.status.containerStatuses[0].restartCount}",
    )
    assert status == "docker.io/library/nginx:1.27 0"  # started once, from the new image
    assert events(cluster, "Pulling") == [
        'Pulling image "nginx:1.26"',
        'Pulling image "nginx:1.27"',
    ]
    assert [m.split(" in ")[0] for m in events(cluster, "Pulled")] == [
        'Successfully pulled image "nginx:1.26"',
        'Successfully pulled image "nginx:1.27"',
    ]
    assert len(events(cluster, "Started")) == 1
