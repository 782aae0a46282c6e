"""The usage history through `pinnace up`: a pod created with kubectl shows, in the
dashboard's API, the memory its behaviour annotation gives it, as the node's figures read for
the history (`NodeAgent.resource_metrics`) have it."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

from tests.http.conftest import launch, stop

MANIFEST = """
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: default
  annotations:
    sim.pinnace.dev/memory: 64Mi
spec:
  containers:
  - name: app
    image: nginx:1.27
"""


def test_a_pods_usage_history_holds_what_its_container_uses(tmp_path: Path) -> None:
    cluster = launch(tmp_path, flags=("--nodes", "1"))
    try:
        applied = cluster.kubectl("apply", "-f", "-", stdin=MANIFEST)
        assert applied.returncode == 0, applied.stderr
        seen: list[float | None] = []
        deadline = time.monotonic() + 90  # samples every 10 s of real time
        while time.monotonic() < deadline:
            url = cluster.url + "/dashboard/api/pods/default/p"
            with urllib.request.urlopen(url, timeout=20) as answer:
                seen = (json.load(answer)["history"] or {}).get("memory") or []
            if 64 * 1024 * 1024 in seen:
                break
            time.sleep(2)
        assert 64 * 1024 * 1024 in seen
    finally:
        stop(cluster)
