"""Bodies read and objects written back as kube-apiserver v1.32's Go decoding and encoding
do them, with real kubectl and plain HTTP against `pinnace up`."""

from __future__ import annotations

import http.client
import json
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
    address = urlparse(cluster.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=20)
    try:
        headers = {"Content-Type": "application/yaml", "Accept": "application/json"}
        connection.request("POST", path, body=body.encode(), headers=headers)
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
