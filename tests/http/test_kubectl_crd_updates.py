"""A CustomResourceDefinition updated with real kubectl against `pinnace up` takes effect at
once, as apiextensions-apiserver v1.32's crdHandler serves every update: a storage version
added is served and recorded in status.storedVersions, a resource stored at the old version is
read at the new one, an unserved version answers 404 while the other keeps working, a version
still in storedVersions cannot leave spec.versions, and printer columns change."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.http.test_kubectl_crds import CRD, CRONTAB

V1BETA1 = """\
    - name: v1beta1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
      additionalPrinterColumns:
        - name: Image
          type: string
          jsonPath: .spec.image
"""
STORED_AT_V1BETA1 = CRD.replace("storage: true", "storage: false").replace(
    "  versions:\n", "  versions:\n" + V1BETA1, 1
)
V1_UNSERVED = STORED_AT_V1BETA1.replace(
    "      served: true\n      storage: false", "      served: false\n      storage: false"
)
CRD_NAME = "crd/crontabs.stable.example.com"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-crd-updates"))
    yield running
    stop(running)


def _raw(cluster: Cluster, path: str) -> Any:
    return json.loads(cluster.ok("get", "--raw", path))


def test_updating_a_crd_through_kubectl(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=CRD)
    cluster.ok("wait", "--for", "condition=established", CRD_NAME)
    cluster.ok("apply", "-f", "-", stdin=CRONTAB.format(name="old", extra=""))

    assert cluster.ok("apply", "-f", "-", stdin=STORED_AT_V1BETA1).endswith("configured\n")
    crd = json.loads(cluster.ok("get", CRD_NAME, "-o", "json"))
    assert crd["metadata"]["generation"] == 2
    assert crd["status"]["storedVersions"] == ["v1", "v1beta1"]
    group = _raw(cluster, "/apis/stable.example.com")
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]
    old = _raw(cluster, "/apis/stable.example.com/v1beta1/namespaces/default/crontabs/old")
    assert old["apiVersion"] == "stable.example.com/v1beta1"
    listed = _raw(cluster, "/apis/stable.example.com/v1beta1/namespaces/default/crontabs")
    assert [i["apiVersion"] for i in listed["items"]] == ["stable.example.com/v1beta1"]
    lines = cluster.ok("get", "crontabs.v1beta1.stable.example.com").splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["NAME", "IMAGE"]
    assert re.split(r"\s{2,}", lines[1]) == ["old", "my-awesome-cron-image"]

    cluster.ok("apply", "-f", "-", stdin=V1_UNSERVED)
    gone = cluster.kubectl(
        "get", "--raw", "/apis/stable.example.com/v1/namespaces/default/crontabs"
    )
    assert "(NotFound)" in gone.stderr
    assert _raw(cluster, "/apis/stable.example.com/v1beta1/namespaces/default/crontabs/old")

    head, rest = STORED_AT_V1BETA1.split("    - name: v1\n")
    refused = cluster.kubectl(
        "apply", "-f", "-", stdin=head + "  scope:" + rest.split("  scope:")[1]
    )
    assert refused.stderr.strip() == (
        'The CustomResourceDefinition "crontabs.stable.example.com" is invalid: '
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was '
        "previously a storage version, and must remain in spec.versions until a storage "
        "migration ensures no data remains persisted in v1 and removes v1 from "
        "status.storedVersions"
    )


def test_a_watch_ends_when_its_crd_is_deleted(cluster: Cluster) -> None:
    """kubectl's watch of the custom resources sees its stream close, and a new watch gets
    404, once the CRD is gone (runs after the update test: v1beta1 is the served version)."""
    watching = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "get",
            "crontabs.v1beta1.stable.example.com",
            "-w",
            "-o",
            "name",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KUBECACHEDIR": str(cluster.workdir / "cache")},
    )
    try:
        assert watching.stdout is not None
        first = watching.stdout.readline()
        assert first == "crontab.stable.example.com/old\n", watching.communicate()
        cluster.ok("delete", CRD_NAME)
        out, _ = watching.communicate(timeout=30)
    finally:
        watching.kill()
        watching.wait()
    assert out == "crontab.stable.example.com/old\n"  # its deletion, then the stream closed
    again = cluster.kubectl(
        "get", "--raw", "/apis/stable.example.com/v1beta1/namespaces/default/crontabs?watch=1"
    )
    assert "(NotFound)" in again.stderr
