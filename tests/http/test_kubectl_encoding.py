"""What an object reads back as, with real kubectl against `pinnace up`: written as
kube-apiserver v1.32's Go encoding writes it."""

from __future__ import annotations

import json

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
