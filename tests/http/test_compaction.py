"""`pinnace up --compaction-interval`: history older than the last interval is compacted, and
clients that ask for it get 410 Expired as from kube-apiserver."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from kubernetes import client, config, watch
from tests.etcd import EtcdServer
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

from pinnace.cli.main import main

INTERVAL = "0.2"
PATIENCE = 20.0
"""Seconds to wait for the compactor to pass the revisions written here."""


@pytest.fixture(scope="module", params=["memory", "etcd"])
def compacting(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """`pinnace up` compacting every INTERVAL seconds: in memory, or on an etcd (which the
    compaction compacts too)."""
    directory = tmp_path_factory.mktemp("compacting")
    flags = ("--compaction-interval", INTERVAL)
    if request.param == "memory":
        running = launch(directory, flags=flags)
        yield running
        stop(running)
        return
    with EtcdServer() as etcd:
        storage = ("--data-dir", str(directory / "data"), "--etcd-servers", etcd.url)
        running = launch(directory, *storage, flags=flags)
        yield running
        stop(running)


@pytest.fixture(scope="module")
def core(compacting: Cluster) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(str(compacting.kubeconfig))
    yield client.CoreV1Api(api_client)
    api_client.close()


def _compacted_past(core: client.CoreV1Api, revision: str) -> None:
    """Wait until a list at exactly `revision` is refused as compacted."""

    def refusal() -> client.ApiException | None:
        try:
            core.list_namespaced_config_map(
                "default", resource_version=revision, resource_version_match="Exact"
            )
        except client.ApiException as e:
            return e
        return None

    refused = eventually(refusal, timeout=PATIENCE, interval=0.05)
    assert refused.status == 410
    assert '"message":"The resourceVersion for the provided list is too old."' in refused.body


def test_a_watch_from_a_compacted_revision_gets_410(core: client.CoreV1Api) -> None:
    first = core.create_namespaced_config_map("default", {"metadata": {"name": "old"}})
    revision = first.metadata.resource_version
    core.patch_namespaced_config_map("old", "default", {"data": {"v": "2"}})
    _compacted_past(core, revision)
    with pytest.raises(client.ApiException) as e:
        list(
            watch.Watch().stream(
                core.list_namespaced_config_map,
                "default",
                resource_version=revision,
                timeout_seconds=5,
            )
        )
    assert e.value.status == 410
    assert e.value.reason.startswith(f"Expired: too old resource version: {revision} (")


def test_an_expired_continue_token_is_410_with_a_token_for_the_rest(
    core: client.CoreV1Api,
) -> None:
    for name in ("page-a", "page-b"):
        core.create_namespaced_config_map("kube-public", {"metadata": {"name": name}})
    first = core.list_namespaced_config_map("kube-public", limit=1)
    core.patch_namespaced_config_map("page-b", "kube-public", {"data": {"v": "2"}})
    _compacted_past(core, first.metadata.resource_version)
    with pytest.raises(client.ApiException) as e:
        core.list_namespaced_config_map("kube-public", limit=1, _continue=first.metadata._continue)
    assert e.value.status == 410
    token = json.loads(e.value.body)["metadata"]["continue"]
    rest = core.list_namespaced_config_map("kube-public", limit=10, _continue=token)
    assert "page-b" in [c.metadata.name for c in rest.items]


def test_the_interval_must_be_a_positive_number_of_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for bad in ("0", "-5", "soon"):
        with pytest.raises(SystemExit) as e:
            main(["up", "--compaction-interval", bad])
        assert e.value.code == 2
        assert (
            f"argument --compaction-interval: must be a positive number of seconds, not {bad!r}"
            in capsys.readouterr().err
        )
