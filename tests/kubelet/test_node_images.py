"""node.status.images: the images a node is configured with and those it pulled for its
containers, largest first, at most 50, as the kubelet reports them."""

from __future__ import annotations

from tests.kubelet.conftest import NODES, Node, pod

from pinnace.kubelet import NodeConfig

CACHED = {"names": ["registry.example/cache:1"], "sizeBytes": 300 * 2**20}


def images(node: Node) -> list[dict]:
    return node.run(node.client.get(NODES, "", "node-1"))["status"]["images"]


def test_images_pulled_for_containers_are_reported_at_the_next_status_sync() -> None:
    node = Node(NodeConfig(name="node-1", images=(CACHED,)))
    try:
        assert images(node) == [CACHED]
        node.create_pod(pod("web", node="node-1"))  # nginx:1.27
        node.settle(11)
        reported = images(node)
        names = [i["names"] for i in reported]
        assert names[0] == CACHED["names"]  # the largest first
        nginx = next(i for i in reported if "docker.io/library/nginx:1.27" in i["names"])
        assert nginx["names"][0].startswith("docker.io/library/nginx@sha256:")
        assert 10 * 2**20 <= nginx["sizeBytes"] < 300 * 2**20
        sizes = [i["sizeBytes"] for i in reported]
        assert sizes == sorted(sizes, reverse=True)
    finally:
        node.close()


def test_only_the_50_largest_images_are_reported() -> None:
    configured = tuple({"names": [f"image-{i}:1"], "sizeBytes": i + 1} for i in range(60))
    node = Node(NodeConfig(name="node-1", images=configured))
    try:
        reported = images(node)
        assert len(reported) == 50
        assert reported[0] == {"names": ["image-59:1"], "sizeBytes": 60}
        assert reported[-1] == {"names": ["image-10:1"], "sizeBytes": 11}
    finally:
        node.close()
