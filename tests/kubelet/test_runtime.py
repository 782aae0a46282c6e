"""The simulated runtime's names for images, and its model annotations."""

from __future__ import annotations

import math

import pytest

from pinnace.kubelet.behaviour import BehaviourError, container_behaviour
from pinnace.kubelet.runtime import image_id, image_reference


@pytest.mark.parametrize(
    ("image", "reference"),
    [
        ("nginx", "docker.io/library/nginx:latest"),
        ("nginx:1.27", "docker.io/library/nginx:1.27"),
        ("bitnami/redis", "docker.io/bitnami/redis:latest"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        ("busybox@sha256:" + "a" * 64, "docker.io/library/busybox@sha256:" + "a" * 64),
    ],
)
def test_image_references_as_containerd_names_them(image: str, reference: str) -> None:
    assert image_reference(image) == reference


def test_image_id_is_a_digest_of_the_repository() -> None:
    assert image_id("nginx:1.27").startswith("docker.io/library/nginx@sha256:")
    assert image_id("nginx:1.27") == image_id("docker.io/library/nginx:1.27")
    assert image_id("nginx:1.27") != image_id("nginx:1.26")


def test_a_container_key_wins_over_the_pod_key() -> None:
    pod = {
        "metadata": {
            "annotations": {
                "sim.pinnace.dev/run-seconds": "30",
                "sim.pinnace.dev/run-seconds.worker": "forever",
                "sim.pinnace.dev/exit-code.worker": "3",
            }
        }
    }
    app, worker = container_behaviour(pod, "app"), container_behaviour(pod, "worker")
    assert (app.run_seconds, app.exit_code) == (30.0, 0)
    assert (worker.run_seconds, worker.exit_code) == (math.inf, 3)


def test_a_container_key_wins_whichever_comes_first() -> None:
    pod = {
        "metadata": {
            "annotations": {
                "sim.pinnace.dev/exit-code.worker": "3",
                "sim.pinnace.dev/exit-code": "1",
                "sim.pinnace.dev/exit-code.app-2": "2",
            }
        }
    }
    codes = [container_behaviour(pod, c).exit_code for c in ("app", "worker", "app-2")]
    assert codes == [1, 3, 2]


def test_defaults_run_forever_and_exit_0() -> None:
    model = container_behaviour({"metadata": {}}, "app")
    assert (model.run_seconds, model.exit_code, model.stop_seconds) == (math.inf, 0, 0.0)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "run-seconds",
            "-1",
            'annotation sim.pinnace.dev/run-seconds: invalid value "-1": '
            'must be a non-negative number of seconds or "forever"',
        ),
        (
            "exit-code",
            "256",
            'annotation sim.pinnace.dev/exit-code: invalid value "256": must be 0 to 255',
        ),
        (
            "stop-seconds",
            "inf",
            'annotation sim.pinnace.dev/stop-seconds: invalid value "inf": '
            "must be a non-negative number of seconds",
        ),
    ],
)
def test_bad_values_name_the_annotation(key: str, value: str, message: str) -> None:
    pod = {"metadata": {"annotations": {f"sim.pinnace.dev/{key}": value}}}
    with pytest.raises(BehaviourError) as bad:
        container_behaviour(pod, "app")
    assert str(bad.value) == message
