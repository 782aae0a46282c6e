"""The Kubernetes documentation's CronTab CustomResourceDefinition
(tasks/extend-kubernetes/custom-resources/custom-resource-definitions) with real kubectl and
the Python client against `pinnace up`: the CRD is applied and established, a custom resource
is applied (client-side and server-side), listed with its printer columns and read by
CustomObjectsApi, a bad one gets kube-apiserver v1.32's 422, and deleting the CRD removes its
resources and its kind."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from tests.http.conftest import Cluster, launch, stop

CRD = r"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
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
                cronSpec:
                  type: string
                image:
                  type: string
                replicas:
                  type: integer
                  minimum: 1
                  default: 1
            status:
              type: object
              properties:
                phase:
                  type: string
      subresources:
        status: {}
      additionalPrinterColumns:
        - name: Spec
          type: string
          jsonPath: .spec.cronSpec
        - name: Replicas
          type: integer
          jsonPath: .spec.replicas
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames:
    - ct
"""

CRONTAB = """
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: {name}
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  {extra}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-up-crds"))
    yield running
    stop(running)


def test_a_crd_and_its_custom_resources_through_kubectl(cluster: Cluster) -> None:
    assert cluster.ok("cluster-info").startswith("Kubernetes control plane is running at")
    assert cluster.ok("apply", "-f", "-", stdin=CRD) == (
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created\n"
    )
    cluster.ok("wait", "--for", "condition=established", "crd/crontabs.stable.example.com")

    # A field the schema does not know: kubectl's strict validation refuses it, as v1.32 does.
    pruned = CRONTAB.format(name="my-new-cron-object", extra="unknownField: drop-me")
    refused = cluster.kubectl("apply", "-f", "-", stdin=pruned)
    assert 'strict decoding error: unknown field "spec.unknownField"' in refused.stderr
    assert cluster.ok("apply", "--validate=false", "-f", "-", stdin=pruned) == (
        "crontab.stable.example.com/my-new-cron-object created\n"
    )
    stored = json.loads(cluster.ok("get", "ct", "my-new-cron-object", "-o", "json"))
    assert "unknownField" not in stored["spec"]
    assert stored["spec"]["replicas"] == 1  # the schema's default

    lines = cluster.ok("get", "crontabs").splitlines()
    assert re.split(r"\s{2,}", lines[0]) == ["NAME", "SPEC", "REPLICAS"]
    assert re.split(r"\s{2,}", lines[1]) == ["my-new-cron-object", "* * * * */5", "1"]

    bad = CRONTAB.format(name="bad", extra='replicas: "three"')
    done = cluster.kubectl("apply", "-f", "-", stdin=bad)
    assert done.returncode != 0
    assert done.stderr.strip().endswith(
        'The CronTab "bad" is invalid: spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string"'
    )

    refused = cluster.kubectl("patch", "ct", "my-new-cron-object", "-p", '{"spec":{"x":1}}')
    assert "application/strategic-merge-patch+json is not supported" in refused.stderr

    resources = json.loads(cluster.ok("get", "--raw", "/apis/stable.example.com/v1"))
    assert [r["name"] for r in resources["resources"]] == ["crontabs", "crontabs/status"]
    assert "crontabs" in cluster.ok("api-resources", "--api-group", "stable.example.com")

    api = client.CustomObjectsApi(config.new_client_from_config(str(cluster.kubeconfig)))
    read = api.get_namespaced_custom_object(
        "stable.example.com", "v1", "default", "crontabs", "my-new-cron-object"
    )
    assert read["spec"]["image"] == "my-awesome-cron-image"

    # Server-side apply of a custom resource (Argo CD's, Flux's): managedFields name the
    # manager at the resource's apiVersion, and another manager's change conflicts.
    applied = CRONTAB.format(name="ssa-cron", extra="")
    assert cluster.ok(
        "apply", "--server-side", "--field-manager=argocd", "-f", "-", stdin=applied
    ) == ("crontab.stable.example.com/ssa-cron serverside-applied\n")
    shown = cluster.ok("get", "ct", "ssa-cron", "-o", "yaml", "--show-managed-fields")
    assert "    manager: argocd\n    operation: Apply\n" in shown
    assert "  - apiVersion: stable.example.com/v1\n    fieldsType: FieldsV1\n" in shown
    changed = applied.replace("my-awesome-cron-image", "other-image")
    conflict = cluster.kubectl(
        "apply", "--server-side", "--field-manager=flux", "-f", "-", stdin=changed
    )
    assert 'Apply failed with 1 conflict: conflict with "argocd": .spec.image' in conflict.stderr

    # Server-side apply of the CRD (prometheus-operator's install asks for it) takes the change.
    renamed = CRD.replace("name: Replicas", "name: Count")
    assert cluster.ok("apply", "--server-side", "-f", "-", stdin=renamed) == (
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com "
        "serverside-applied\n"
    )
    header = cluster.ok("get", "crontabs").splitlines()[0]
    assert re.split(r"\s{2,}", header) == ["NAME", "SPEC", "COUNT"]

    cluster.ok("delete", "crd", "crontabs.stable.example.com")
    assert cluster.ok("get", "crd") == ""
    gone = cluster.kubectl("get", "--raw", "/apis/stable.example.com/v1/crontabs")
    assert "NotFound" in gone.stderr
    assert "stable.example.com" not in cluster.ok("api-versions")


WIDGETS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.explain.example.com
spec:
  group: explain.example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          description: A widget to explain.
          properties:
            spec:
              type: object
              properties:
                size:
                  type: integer
                  description: How big the widget is.
                %s
"""


def test_explain_reads_a_crds_schema_as_it_changes(cluster: Cluster) -> None:
    # v1.32 publishes each served version's structural schema in /openapi/v3 (and v2), and
    # publishes it again when the CRD changes.
    cluster.ok("apply", "-f", "-", stdin=WIDGETS % "")
    cluster.ok("wait", "--for", "condition=established", "crd/widgets.explain.example.com")
    explained = cluster.ok("explain", "widget")
    assert "KIND:       Widget" in explained and "A widget to explain." in explained
    assert "metadata\t<ObjectMeta>" in explained
    size = cluster.ok("explain", "widget.spec.size")
    assert "FIELD: size <integer>" in size and "How big the widget is." in size
    v2 = cluster.ok("explain", "widget.spec", "--output=plaintext-openapiv2")
    assert "size\t<integer>" in v2

    colour = "colour: {type: string, description: The widget's colour.}"
    cluster.ok("apply", "-f", "-", stdin=WIDGETS % colour)
    assert "The widget's colour." in cluster.ok("explain", "widget.spec.colour")

    cluster.ok("delete", "crd", "widgets.explain.example.com")
    index = json.loads(cluster.ok("get", "--raw", "/openapi/v3"))
    assert "apis/explain.example.com/v1" not in index["paths"]
    assert "explain.example.com" not in cluster.ok("get", "--raw", "/openapi/v2")


def test_explain_describes_the_crd_kind_itself(cluster: Cluster) -> None:
    # kube-apiserver v1.32 publishes apiextensions.k8s.io/v1's own types, field by field, in
    # /openapi/v3 and /openapi/v2.
    explained = cluster.ok("explain", "customresourcedefinitions")
    assert "KIND:       CustomResourceDefinition" in explained
    assert "represents a resource that should be exposed on the" in explained
    assert re.search(r"spec\t<CustomResourceDefinitionSpec> -required-", explained)
    schema = cluster.ok("explain", "crd.spec.versions.schema")
    assert "FIELD: schema <CustomResourceValidation>" in schema
    assert "schema describes the schema used for validation, pruning, and defaulting" in schema
    assert "openAPIV3Schema\t<JSONSchemaProps>" in schema
    bounds = cluster.ok("explain", "crd.spec.versions.schema.openAPIV3Schema.maxItems")
    assert "FIELD: maxItems <integer>" in bounds
    v2 = cluster.ok("explain", "crd.spec.names", "--output=plaintext-openapiv2")
    assert "kind\t<string> -required-" in v2 and "shortNames\t<[]string>" in v2


BOATS = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: boats.fleet.example.com
spec:
  group: fleet.example.com
  scope: Namespaced
  names: {plural: boats, singular: boat, kind: Boat}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields:
    - jsonPath: .spec.color
    - jsonPath: .spec.afloat
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
              afloat: {type: boolean}
              length: {type: integer}
"""


def boat(name: str, color: str, afloat: bool) -> str:
    return json.dumps(
        {
            "apiVersion": "fleet.example.com/v1",
            "kind": "Boat",
            "metadata": {"name": name},
            "spec": {"color": color, "afloat": afloat, "length": 7},
        }
    )


def test_field_selectors_on_a_crds_selectable_fields(cluster: Cluster) -> None:
    # CustomResourceFieldSelectors is GA in v1.32: a version's selectableFields are field
    # labels for list and watch, read at their JSON paths; other fields stay refused.
    cluster.ok("apply", "-f", "-", stdin=BOATS)
    cluster.ok("wait", "--for", "condition=established", "crd/boats.fleet.example.com")
    for name, color, afloat in (("a", "red", True), ("b", "blue", True), ("c", "red", False)):
        cluster.ok("create", "-f", "-", stdin=boat(name, color, afloat))

    def names(selector: str) -> list[str]:
        return cluster.ok("get", "boats", "-o", "name", "--field-selector", selector).split()

    assert names("spec.color=red") == ["boat.fleet.example.com/a", "boat.fleet.example.com/c"]
    assert names("spec.color!=red,spec.afloat=true") == ["boat.fleet.example.com/b"]
    refused = cluster.kubectl("get", "boats", "--field-selector", "spec.length=7")
    assert refused.returncode == 1
    assert refused.stderr.endswith("field label not supported: spec.length\n")

    api_client = config.new_client_from_config(str(cluster.kubeconfig))
    try:
        boats = client.CustomObjectsApi(api_client)
        listed = boats.list_namespaced_custom_object(
            "fleet.example.com", "v1", "default", "boats", field_selector="spec.color=red"
        )
        version = listed["metadata"]["resourceVersion"]
        cluster.ok("patch", "boat", "a", "--type=merge", "-p", '{"spec":{"color":"green"}}')
        cluster.ok("patch", "boat", "b", "--type=merge", "-p", '{"spec":{"color":"red"}}')
        stream = boats.list_namespaced_custom_object(
            "fleet.example.com",
            "v1",
            "default",
            "boats",
            field_selector="spec.color=red",
            watch=True,
            resource_version=version,
            timeout_seconds=2,
            _preload_content=False,
        )
        events = [json.loads(line) for line in stream.read().splitlines()]
    finally:
        api_client.close()
    # a stops matching (DELETED to this watch), b starts (ADDED).
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("DELETED", "a"),
        ("ADDED", "b"),
    ]


TYPED_COLUMNS = r"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.typed.example.com
spec:
  group: typed.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
      additionalPrinterColumns:
        - {name: Count, type: integer, jsonPath: .spec.count}
        - {name: Ratio, type: number, jsonPath: .spec.ratio}
        - {name: Enabled, type: boolean, jsonPath: .spec.enabled}
        - {name: Tags, type: string, jsonPath: ".spec.tags[*]"}
        - {name: Seen, type: date, jsonPath: .spec.seen}
"""


def test_printer_columns_show_only_values_of_their_declared_type(cluster: Cluster) -> None:
    """cellForJSONValue: a value of another JSON type leaves the cell empty, a float in an
    integer column is truncated, a date that does not parse is `<invalid>`, and a JSONPath that
    selects several values shows the first."""
    cluster.ok("apply", "-f", "-", stdin=TYPED_COLUMNS)
    cluster.ok("wait", "--for", "condition=established", "crd/gizmos.typed.example.com")
    gizmos = {
        "well-typed": '{"count": 2.7, "ratio": 3, "enabled": true, "tags": ["a", "b"],'
        ' "seen": "2020-01-01T00:00:00Z"}',
        "mistyped": '{"count": "two", "ratio": "x", "enabled": "yes", "tags": [7],'
        ' "seen": "yesterday"}',
    }
    for name, spec in gizmos.items():
        body = {"apiVersion": "typed.example.com/v1", "kind": "Gizmo", "metadata": {"name": name}}
        cluster.ok("create", "-f", "-", stdin=json.dumps({**body, "spec": json.loads(spec)}))
    table = cluster.ok("get", "gizmos.typed.example.com", "--sort-by=.metadata.name")
    header, *rows = table.splitlines()
    starts = [match.start() for match in re.finditer(r"\S+", header)]
    cells = [
        [row[start:end].strip() for start, end in zip(starts, [*starts[1:], None], strict=True)]
        for row in rows
    ]
    assert header.split() == ["NAME", "COUNT", "RATIO", "ENABLED", "TAGS", "SEEN"]
    assert cells[0] == ["mistyped", "", "", "", "7", "<invalid>"]
    assert cells[1][:5] == ["well-typed", "2", "3", "true", "a"]
    assert re.fullmatch(r"\d+y\d*d?", cells[1][5])
