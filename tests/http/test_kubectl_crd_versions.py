"""A CustomResourceDefinition's versions as real kubectl meets them against `pinnace up`, as
apiextensions-apiserver v1.32's crdHandler serves them: a deprecated version's warning comes
with every answer about it, errors included."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

WIDGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1alpha1
    served: true
    storage: false
    deprecated: true
    deprecationWarning: "v1alpha1 widgets go away in 2027"
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1beta1
    served: true
    storage: false
    deprecated: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""
WIDGET = "apiVersion: example.com/{version}\nkind: Widget\nmetadata: {{name: {name}}}\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-crd-versions"))
    running.ok("apply", "-f", "-", stdin=WIDGETS)
    running.ok("wait", "--for", "condition=established", "crd/widgets.example.com")
    yield running
    stop(running)


def test_a_deprecated_version_warns_on_every_answer(cluster: Cluster) -> None:
    made = cluster.kubectl("create", "-f", "-", stdin=WIDGET.format(version="v1alpha1", name="a"))
    assert made.returncode == 0, made.stderr
    assert made.stderr == "Warning: v1alpha1 widgets go away in 2027\n"

    listed = cluster.kubectl("get", "widgets.v1beta1.example.com")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == (
        "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\n"
    )
    missing = cluster.kubectl("get", "widgets.v1beta1.example.com", "nope")
    assert missing.stderr.splitlines() == [
        "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget",
        'Error from server (NotFound): widgets.example.com "nope" not found',
    ]
    current = cluster.kubectl("get", "widgets.v1.example.com", "a")
    assert current.returncode == 0 and current.stderr == ""
