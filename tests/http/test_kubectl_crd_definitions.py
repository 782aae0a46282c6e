"""CustomResourceDefinitions as real kubectl meets them against `pinnace up`, as
apiextensions-apiserver v1.32 validates and serves them: a deprecated version's warning comes
with every answer about it, errors included; a schema whose list types or defaults break
v1.32's rules is refused with its words, and an update may keep a rule the stored CRD already
broke."""

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
    running = launch(tmp_path_factory.mktemp("pinnace-up-crd-definitions"))
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


GADGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, kind: Gadget}
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
            properties:
%s
"""
SPEC = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties"


def _refused(cluster: Cluster, properties: str) -> list[str]:
    done = cluster.kubectl("apply", "-f", "-", stdin=GADGETS % properties)
    assert done.returncode == 1, done.stdout
    return done.stderr.splitlines()


def test_list_types_are_checked(cluster: Cluster) -> None:
    ports = """\
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, properties: {name: {type: string}}}
"""
    assert _refused(cluster, ports) == [
        'The CustomResourceDefinition "gadgets.example.com" is invalid: '
        f"{SPEC}[ports].items.properties[name].default: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property"
    ]
    others = """\
              tags:
                type: array
                x-kubernetes-list-type: bag
                items: {type: string}
              keys:
                type: string
                x-kubernetes-list-map-keys: [a]
"""
    assert sorted(_refused(cluster, others)[1:]) == [
        f"* {SPEC}[keys].x-kubernetes-list-type: Required value: must be map if "
        "x-kubernetes-list-map-keys is non-empty",
        f'* {SPEC}[tags].x-kubernetes-list-type: Unsupported value: "bag": supported values: '
        '"atomic", "set", "map"',
    ]


def test_defaults_must_validate_against_their_schema(cluster: Cluster) -> None:
    defaults = """\
              image: {type: string, default: 5}
              replicas: {type: integer, minimum: 1, default: 0}
              sizes: {type: array, items: {type: integer, maximum: 3}, default: [1, 5]}
              owner: {type: object, properties: {name: {type: string}}, default: {team: a}}
"""
    image, owner, replicas, sizes = sorted(_refused(cluster, defaults)[1:])
    # The map is rendered by Pinnace's Go-like printer, not byte for byte as Go's %#v.
    assert owner.startswith(f"* {SPEC}[owner].default: Invalid value: map[")
    assert owner.endswith("]: must not have unknown fields")
    assert [image, replicas, sizes] == [
        f'* {SPEC}[image].default: Invalid value: "integer":  in body must be of type string: '
        '"integer"',
        f"* {SPEC}[replicas].default: Invalid value: 0:  in body should be greater than or "
        "equal to 1",
        f"* {SPEC}[sizes].default.[1]: Invalid value: 5: [1] in body should be less than or "
        "equal to 3",
    ]
    fine = "              image: {type: string, default: nginx}\n"
    assert cluster.ok("apply", "-f", "-", stdin=GADGETS % fine).endswith("created\n")


def test_schema_keywords_validation_rules_and_paths(cluster: Cluster) -> None:
    odd = """\
              a: {type: foo}
              b: {type: object, patternProperties: {x: {type: string}}}
              c:
                type: string
                x-kubernetes-validations:
                - rule: ""
                - {rule: "self.size() > 1", message: " ", reason: Bogus}
"""
    refused = _refused(cluster, odd)
    assert sorted(refused[1:]) == [
        f'* {SPEC}[a].type: Unsupported value: "foo": supported values: "array", "boolean", '
        '"integer", "number", "object", "string"',
        f"* {SPEC}[b].patternProperties: Forbidden: patternProperties is not supported",
        f"* {SPEC}[c].x-kubernetes-validations[0].rule: Required value: rule is not specified",
        f'* {SPEC}[c].x-kubernetes-validations[1].message: Invalid value: " ": message must be '
        "non-empty if specified",
        f'* {SPEC}[c].x-kubernetes-validations[1].reason: Unsupported value: "Bogus": supported '
        'values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", '
        '"FieldValueRequired"',
    ]
    columns_and_scale = (
        GADGETS.replace(
            "    schema:\n",
            "    additionalPrinterColumns: [{name: Size, type: text, jsonPath: spec.size}]\n"
            "    subresources: {scale: {specReplicasPath: .status.replicas, "
            "statusReplicasPath: .status.replicas}}\n"
            "    schema:\n",
        )
        % "              size: {type: string}\n"
    )
    done = cluster.kubectl("apply", "-f", "-", stdin=columns_and_scale)
    version = "spec.versions[0]"
    assert sorted(done.stderr.splitlines()[1:]) == [
        f'* {version}.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be '
        "a simple json path starting with .",
        f'* {version}.additionalPrinterColumns[0].type: Invalid value: "text": must be one of '
        "boolean,date,integer,number,string",
        f'* {version}.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": '
        "should be a json path under .spec",
    ]


HOLDS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: holds.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: holds, kind: Hold}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""
HOLD = "apiVersion: example.com/v1\nkind: Hold\nmetadata: {name: %s, finalizers: %s}\n"


def test_a_terminating_crd_refuses_creates_with_its_reason(cluster: Cluster) -> None:
    cluster.ok("apply", "-f", "-", stdin=HOLDS)
    cluster.ok("wait", "--for", "condition=established", "crd/holds.example.com")
    cluster.ok("create", "-f", "-", stdin=HOLD % ("held", "[example.com/keep]"))
    cluster.ok("delete", "crd", "holds.example.com", "--wait=false")
    cluster.ok("wait", "--for", "condition=Terminating", "crd/holds.example.com")
    refused = cluster.kubectl("create", "-f", "-", stdin=HOLD % ("late", "[]"))
    assert refused.stderr == (
        'Error from server (MethodNotAllowed): error when creating "STDIN": create not allowed '
        "while custom resource definition is terminating\n"
    )
    cluster.ok(
        "patch",
        "holds.example.com",
        "held",
        "--type=merge",
        "-p",
        '{"metadata":{"finalizers":null}}',
    )
    cluster.ok("wait", "--for", "delete", "crd/holds.example.com", "--timeout=30s")
