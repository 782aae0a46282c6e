"""Bodies read and objects written back as kube-apiserver v1.32's Go decoding and encoding
do them, with real kubectl and plain HTTP against `pinnace up`."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import urlparse

from tests.http.conftest import Cluster

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: zeros
  generateName: ""
spec:
  replicas: 0
  minReadySeconds: 0
  paused: false
  revisionHistoryLimit: 0
  selector: {matchLabels: {app: zeros}}
  template:
    metadata: {labels: {app: zeros}}
    spec:
      hostNetwork: false
      nodeName: ""
      containers:
      - {name: c, image: nginx, tty: false, workingDir: ""}
"""


def test_a_zero_held_by_value_is_left_out_and_a_pointers_kept(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=DEPLOYMENT)
    got = json.loads(cluster.ok("get", "deployment", "zeros", "-o", "json"))
    spec = got["spec"]
    # int32 and bool fields with omitempty: Go never writes their zero.
    assert "minReadySeconds" not in spec and "paused" not in spec
    assert "generateName" not in got["metadata"]
    pod = spec["template"]["spec"]
    assert "hostNetwork" not in pod and "nodeName" not in pod
    assert set(pod["containers"][0]) >= {"name", "image"}
    assert not {"tty", "workingDir"} & set(pod["containers"][0])
    # *int32 fields keep a zero.
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (0, 0)


def post_yaml(cluster: Cluster, path: str, body: str) -> tuple[int, list[str], Any]:
    """POST a YAML body; (status, Warning headers, decoded answer)."""
    return send(cluster, "POST", path, body, "application/yaml")


def send(
    cluster: Cluster, method: str, path: str, body: str, content_type: str
) -> tuple[int, list[str], Any]:
    """A body sent as written (kubectl would write it again); (status, Warning headers,
    decoded answer)."""
    address = urlparse(cluster.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=20)
    try:
        headers = {"Content-Type": content_type, "Accept": "application/json"}
        connection.request(method, path, body=body.encode(), headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.headers.get_all("Warning") or [], json.loads(answer.read())
    finally:
        connection.close()


REPEATED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  labels: {app: a, app: b}
data:
  x: "1"
  x: "2"
  y: "3"
bogus: 1
"""


def test_keys_a_yaml_body_repeats(cluster: Cluster) -> None:
    configmaps = "/api/v1/namespaces/default/configmaps"
    code, _, answer = post_yaml(cluster, configmaps + "?fieldValidation=Strict", REPEATED % "s")
    assert (code, answer["message"]) == (
        400,
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        "yaml: unmarshal errors:\n"
        '  line 5: key "app" already set in map\n'
        '  line 8: key "x" already set in map, '
        'unknown field "bogus"',
    )
    # With Warn the YAML error spans lines, which no Warning header may hold: v1.32 drops it
    # and sends the unknown field's only; the last of the repeated keys counts.
    code, warnings, answer = post_yaml(
        cluster, configmaps + "?fieldValidation=Warn", REPEATED % "w"
    )
    assert (code, warnings) == (201, ['299 - "unknown field \\"bogus\\""'])
    assert (answer["metadata"]["labels"], answer["data"]) == ({"app": "b"}, {"x": "2", "y": "3"})
    code, warnings, _ = post_yaml(cluster, configmaps + "?fieldValidation=Ignore", REPEATED % "i")
    assert (code, warnings) == (201, [])


PATCHED = "/api/v1/namespaces/default/configmaps/patched"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def test_a_patch_s_repeated_keys_are_warned_about_or_refused(cluster: Cluster) -> None:
    """kube-apiserver's patch handler decodes the patch's text strictly: its repeated keys
    come before the patched object's unknown fields, as warnings, or with Strict in one 422
    on the field `patch` that nothing is written past."""
    cluster.ok("create", "configmap", "patched", "--from-literal=a=1")
    merge = '{"data":{"x":"1","x":"2"},"bogus":1}'
    code, warnings, answer = send(cluster, "PATCH", PATCHED, merge, MERGE)
    assert (code, warnings) == (
        200,
        ['299 - "duplicate field \\"data.x\\""', '299 - "unknown field \\"bogus\\""'],
    )
    assert answer["data"] == {"a": "1", "x": "2"}
    code, warnings, _ = send(cluster, "PATCH", PATCHED + "?fieldValidation=Ignore", merge, MERGE)
    assert (code, warnings) == (200, [])
    # A merge patch's 422 shows the patched object as json-patch writes it (keys sorted).
    merge = '{"data":{"y":"1","y":"2"}}'
    strict = PATCHED + "?fieldValidation=Strict"
    code, _, answer = send(cluster, "PATCH", strict, merge, MERGE)
    assert (code, answer["reason"]) == (422, "Invalid")
    detail = 'strict decoding error: duplicate field "data.y"'
    assert answer["message"].startswith(
        ' "" is invalid: patch: Invalid value: "{\\"apiVersion\\":\\"v1\\",'
        '\\"data\\":{\\"a\\":\\"1\\",\\"x\\":\\"2\\",\\"y\\":\\"2\\"},'
    )
    assert answer["message"].endswith('": ' + detail)
    [cause] = answer["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
    # A strategic merge patch's shows the patch, as Go's %+v prints a map.
    smp = '{"data":{"y":"1","y":"2"},"bogus":1}'
    code, _, answer = send(cluster, "PATCH", strict, smp, STRATEGIC)
    assert (code, answer["message"]) == (
        422,
        ' "" is invalid: patch: Invalid value: "map[bogus:1 data:map[y:2]]": '
        'strict decoding error: duplicate field "data.y", unknown field "bogus"',
    )
    # A JSON patch's operations: their own unknown and repeated fields, as "json patch" ones.
    patched = cluster.kubectl(
        "patch", "configmap", "patched", "--type", "json",
        "-p", '[{"op": "add", "path": "/data/z", "value": "3", "foo": 1}]',
    )  # fmt: skip
    assert patched.returncode == 0, patched.stderr
    assert 'Warning: json patch unknown field "[0].foo"' in patched.stderr
    ops = '[{"op":"add","path":"/data/q","path":"/data/w","value":"4"}]'
    code, _, answer = send(cluster, "PATCH", strict, ops, JSON_PATCH)
    assert code == 422
    assert answer["message"].endswith(
        '": strict decoding error: json patch duplicate field "[0].path"'
    )
    code, _, answer = send(cluster, "PATCH", PATCHED, '{"op":"add"}', JSON_PATCH)
    assert (code, answer["message"]) == (
        400,
        "error decoding patch: json: cannot unmarshal object into Go value of type "
        "[]handlers.jsonPatchOp",
    )
    stored = json.loads(cluster.ok("get", "configmap", "patched", "-o", "json"))
    assert stored["data"] == {"a": "1", "x": "2", "z": "3"}


APPLIED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  x: "1"
  x: "2"
"""


def test_an_apply_s_repeated_keys_are_warned_about_or_refused(cluster: Cluster) -> None:
    """The applied YAML decoded strictly once the apply has run: with Strict a 400 (nothing
    is created), with Warn a warning for each line of the YAML error."""
    path = "/api/v1/namespaces/default/configmaps/applied?fieldManager=yaml"
    code, _, answer = send(cluster, "PATCH", path + "&fieldValidation=Strict", APPLIED, APPLY)
    assert (code, answer["reason"], answer["message"]) == (
        400,
        "BadRequest",
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n"
        '  line 7: key "x" already set in map',
    )
    assert "NotFound" in cluster.kubectl("get", "configmap", "applied").stderr
    code, warnings, answer = send(cluster, "PATCH", path, APPLIED, APPLY)
    assert (code, warnings) == (201, ['299 - "line 7: key \\"x\\" already set in map"'])
    assert answer["data"] == {"x": "2"}
    code, warnings, _ = send(cluster, "PATCH", path + "&fieldValidation=Strict", APPLIED, APPLY)
    assert code == 400


def test_a_patched_object_of_the_wrong_types_is_the_patch_handler_s_error(
    cluster: Cluster,
) -> None:
    """A patch that leaves a value Go cannot decode (a string for replicas) is refused as
    patch.go refuses it, whatever the fieldValidation: a json or merge patch with the JSON
    decoder's error, a strategic merge patch with the unstructured converter's, both in a
    422 on the field `patch`; an apply with its field manager's 500. Nothing is written."""
    cluster.ok("create", "deployment", "typed", "--image=nginx")
    before = json.loads(cluster.ok("get", "deployment", "typed", "-o", "json"))
    wrong = '{"spec":{"replicas":"x"}}'
    merged = cluster.kubectl("patch", "deployment", "typed", "--type", "merge", "-p", wrong)
    assert merged.returncode == 1
    assert merged.stderr.startswith('The request is invalid: patch: Invalid value: "{')
    decoding = (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
        "of type int32"
    )
    assert merged.stderr.rstrip().endswith('": ' + decoding)
    path = "/apis/apps/v1/namespaces/default/deployments/typed?fieldValidation=Ignore"
    ops = '[{"op":"replace","path":"/spec/replicas","value":"x"}]'
    code, _, answer = send(cluster, "PATCH", path, ops, JSON_PATCH)
    assert (code, answer["reason"]) == (422, "Invalid")
    assert '\\"replicas\\":\\"x\\"' in answer["message"]
    assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert answer["message"].endswith('": ' + decoding)
    [cause] = answer["details"]["causes"]
    assert (cause["reason"], cause["field"]) == ("FieldValueInvalid", "patch")
    strategic = cluster.kubectl("patch", "deployment", "typed", "-p", wrong)
    assert (strategic.returncode, strategic.stderr) == (
        1,
        'The request is invalid: patch: Invalid value: "map[spec:map[replicas:x]]": '
        "unrecognized type: int32\n",
    )
    image = '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":5}]}}}}'
    code, _, answer = send(cluster, "PATCH", path, image, STRATEGIC)
    assert (code, answer["message"]) == (
        422,
        ' "" is invalid: patch: Invalid value: '
        '"map[spec:map[template:map[spec:map[containers:[map[image:5 name:nginx]]]]]]": '
        "cannot convert int64 to string",
    )
    apply = "/apis/apps/v1/namespaces/default/deployments/typed?fieldManager=me&force=true"
    applied = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: typed}\nspec: %s\n"
    code, _, answer = send(cluster, "PATCH", apply, applied % "{replicas: x}", APPLY)
    assert (code, answer.get("reason"), answer["message"]) == (
        500,
        None,
        "failed to create typed patch object (/typed; apps/v1, Kind=Deployment): "
        ".spec.replicas: expected numeric (int or float), got string",
    )
    limits = "{template: {spec: {containers: [{name: nginx, resources: {limits: {cpu: z}}}]}}}"
    code, _, answer = send(cluster, "PATCH", apply, applied % limits, APPLY)
    assert (code, answer["message"]) == (
        500,
        "failed to convert new object (/typed; apps/v1, Kind=Deployment) to proper version: "
        "unable to convert unstructured object to apps/v1, Kind=Deployment: quantities must "
        "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    )
    after = json.loads(cluster.ok("get", "deployment", "typed", "-o", "json"))
    assert after["spec"] == before["spec"]
    assert after["metadata"]["generation"] == 1


NIGHTLY = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
          volumes:
          - name: scratch
            ephemeral:
              volumeClaimTemplate:
                spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
"""


def listed(cluster: Cluster, resource: str, selector: str) -> list[Any]:
    found = cluster.ok("get", resource, "-l", selector, "-o", "json")
    items: list[Any] = json.loads(found)["items"]
    return items


def watched(cluster: Cluster, path: str) -> list[Any]:
    """The events of a watch of `path` that ends after a second."""
    address = urlparse(cluster.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=20)
    try:
        connection.request("GET", path + "?watch=true&timeoutSeconds=1")
        return [json.loads(line) for line in connection.getresponse().read().splitlines()]
    finally:
        connection.close()


def test_embedded_metadata_has_a_null_creation_timestamp(cluster: Cluster) -> None:
    """ObjectMeta's creationTimestamp is a struct Go always writes, null when zero: every pod,
    job and claim template's metadata has it, in objects, lists and watch events alike, but
    not in managedFields; what kubectl reads back can be written again unchanged."""
    cluster.ok("create", "deployment", "stamped", "--image=nginx")
    text = cluster.ok("get", "deployment", "stamped", "-o", "yaml")
    assert "    metadata:\n      creationTimestamp: null\n      labels:\n" in text
    deployment = json.loads(cluster.ok("get", "deployment", "stamped", "-o", "json"))
    assert deployment["spec"]["template"]["metadata"] == {
        "creationTimestamp": None,
        "labels": {"app": "stamped"},
    }
    shown = cluster.ok("get", "deployment", "stamped", "-o", "json", "--show-managed-fields")
    managed = json.loads(shown)["metadata"]["managedFields"]
    [created] = [entry for entry in managed if entry["manager"] == "kubectl-create"]
    assert created["fieldsV1"]["f:spec"]["f:template"]["f:metadata"] == {
        "f:labels": {".": {}, "f:app": {}}
    }
    path = "/apis/apps/v1/namespaces/default/deployments"
    [event] = [e for e in watched(cluster, path) if e["object"]["metadata"]["name"] == "stamped"]
    assert event["object"]["spec"]["template"]["metadata"]["creationTimestamp"] is None
    deadline = time.monotonic() + 30
    while not (replica_sets := listed(cluster, "rs", "app=stamped")):
        assert time.monotonic() < deadline, "the deployment controller made no ReplicaSet"
        time.sleep(0.2)
    [replica_set] = replica_sets
    assert replica_set["spec"]["template"]["metadata"]["creationTimestamp"] is None
    # Written back as read, the template is the same: no new ReplicaSet, the same hash.
    cluster.ok("replace", "-f", "-", stdin=text)
    [again] = listed(cluster, "rs", "app=stamped")
    assert again["metadata"]["name"] == replica_set["metadata"]["name"]
    cluster.ok("create", "-f", "-", stdin=NIGHTLY)
    spec = json.loads(cluster.ok("get", "cronjob", "nightly", "-o", "json"))["spec"]
    assert spec["jobTemplate"]["metadata"] == {"creationTimestamp": None}
    pod = spec["jobTemplate"]["spec"]["template"]
    assert pod["metadata"] == {"creationTimestamp": None}
    claim = pod["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]
    assert claim["metadata"] == {"creationTimestamp": None}
