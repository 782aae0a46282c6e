"""A CRD's `x-kubernetes-validations` rules through `pinnace up` and real kubectl, as an
operator's CRD uses them: custom resources that keep the rules are stored, those that break
one get kube-apiserver v1.32's 422 and are not stored, a transition rule refuses an update,
and a CRD whose rule does not compile is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.http.conftest import Cluster, launch, stop

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: databases.ops.example.com
spec:
  group: ops.example.com
  scope: Namespaced
  names: {plural: databases, singular: database, kind: Database}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            - rule: "!has(self.backup) || self.backup.schedule.split(' ').size() == 5"
              fieldPath: .backup
              reason: FieldValueInvalid
              messageExpression: "'schedule needs 5 fields, not ' + self.backup.schedule"
            properties:
              engine:
                type: string
                x-kubernetes-validations:
                - rule: self == oldSelf
                  message: engine is immutable
              replicas: {type: integer}
              maxReplicas: {type: integer}
              storage:
                type: string
                x-kubernetes-validations:
                - rule: quantity(self).isGreaterThan(quantity('1Gi'))
                  reason: FieldValueForbidden
                  message: storage must be more than 1Gi
              backup:
                type: object
                properties:
                  schedule: {type: string}
"""

DATABASE = """
apiVersion: ops.example.com/v1
kind: Database
metadata:
  name: {name}
spec:
  engine: {engine}
  replicas: {replicas}
  maxReplicas: 3
  storage: {storage}
  {extra}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-cel"))
    yield running
    stop(running)


def _database(name: str, engine: str = "postgres", replicas: int = 1, storage: str = "2Gi",
              extra: str = "") -> str:  # fmt: skip
    return DATABASE.format(
        name=name, engine=engine, replicas=replicas, storage=storage, extra=extra
    )


def test_custom_resources_keep_their_crds_rules(cluster: Cluster) -> None:
    assert cluster.ok("apply", "-f", "-", stdin=CRD).endswith("created\n")
    cluster.ok("wait", "--for", "condition=established", "crd/databases.ops.example.com")

    good = _database("orders", extra="backup: {schedule: '0 3 * * *'}")
    assert cluster.ok("apply", "-f", "-", stdin=good) == "database.ops.example.com/orders created\n"

    refused = cluster.kubectl("apply", "-f", "-", stdin=_database("big", replicas=5))
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        'The Database "big" is invalid: spec: Invalid value: "object": replicas must not '
        "exceed maxReplicas"
    )
    several = _database("small", storage="512Mi", extra="backup: {schedule: '@daily'}")
    refused = cluster.kubectl("apply", "-f", "-", stdin=several)
    assert refused.stderr.splitlines()[-3:] == [
        'The Database "small" is invalid: ',
        '* spec.backup: Invalid value: "object": schedule needs 5 fields, not @daily',
        "* spec.storage: Forbidden: storage must be more than 1Gi",
    ]
    names = json.loads(cluster.ok("get", "databases", "-o", "json"))["items"]
    assert [d["metadata"]["name"] for d in names] == ["orders"]

    # The transition rule: the engine may not change once set, the rest may.
    scaled = _database("orders", replicas=2, extra="backup: {schedule: '0 3 * * *'}")
    assert cluster.ok("apply", "-f", "-", stdin=scaled) == (
        "database.ops.example.com/orders configured\n"
    )
    moved = cluster.kubectl("patch", "database", "orders", "--type=merge",
                            "-p", '{"spec":{"engine":"mysql"}}')  # fmt: skip
    assert moved.returncode == 1
    assert moved.stderr.strip() == (
        'The Database "orders" is invalid: spec.engine: Invalid value: "string": engine is '
        "immutable"
    )
    stored = json.loads(cluster.ok("get", "database", "orders", "-o", "json"))
    assert stored["spec"]["engine"] == "postgres" and stored["spec"]["replicas"] == 2


def test_a_crd_whose_rule_does_not_compile_is_refused(cluster: Cluster) -> None:
    broken = CRD.replace("databases", "caches").replace("Database", "Cache")
    broken = broken.replace("database}", "cache}").replace("self == oldSelf", "self == old")
    refused = cluster.kubectl("apply", "-f", "-", stdin=broken)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        'The CustomResourceDefinition "caches.ops.example.com" is invalid: '
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[engine]"
        ".x-kubernetes-validations[0].rule: Invalid value: "
        'apiextensions.ValidationRule{Rule:"self == old", Message:"engine is immutable", '
        'MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
        'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: '
        "<input>:1:9: undeclared reference to 'old' (in container '')",
        " | self == old",
        " | ........^",
    ]
    assert "caches" not in cluster.ok("get", "crd")
