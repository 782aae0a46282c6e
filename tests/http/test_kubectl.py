"""Real kubectl 1.32 against `pinnace up`: what a user types and what they read back."""

from __future__ import annotations

import json
import subprocess
import time

from tests.http.conftest import KUBECTL, Cluster

from pinnace.clock.rfc3339 import parse_time

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: {app}}}
spec:
  containers:
  - name: main
    image: nginx:1.27
    resources:
      requests: {{cpu: 100m, memory: 64Mi}}
"""

NODE = """\
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
status:
  capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
  allocatable: {{cpu: "4", memory: 8Gi, pods: "110"}}
"""


def test_get_namespaces_lists_the_system_namespaces(cluster: Cluster) -> None:
    lines = cluster.ok("get", "namespaces").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "AGE"]
    names = {line.split()[0] for line in lines[1:]}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_create_get_describe_and_delete_a_pod(cluster: Cluster) -> None:
    out = cluster.ok("create", "-f", "-", stdin=POD.format(name="web", app="web"))
    assert out.strip() == "pod/web created"
    lines = cluster.ok("get", "pods", "web").splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["web", "0/1", "Pending", "0"]
    wide = cluster.ok("get", "pod", "web", "-o", "wide").splitlines()[0].split()
    assert wide[5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    described = cluster.ok("describe", "pod", "web")
    assert "Name:             web" in described
    assert "Service Account:  default" in described
    # aligned with the kube-api-access volume's TokenExpirationSeconds, as on a cluster
    assert "QoS Class:                   Burstable" in described
    assert "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s" in described
    obj = json.loads(cluster.ok("get", "pod", "web", "-o", "json"))
    assert obj["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "100m",
        "memory": "64Mi",
    }
    assert cluster.ok("delete", "pod", "web").strip() == 'pod "web" deleted'
    gone = cluster.kubectl("get", "pod", "web")
    assert gone.returncode == 1
    assert gone.stderr.strip() == 'Error from server (NotFound): pods "web" not found'


def test_nodes_show_kubectl_columns(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=NODE.format(name="node-a"))
    lines = cluster.ok("get", "nodes").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1].split()[:3] == ["node-a", "Unknown", "<none>"]
    described = cluster.ok("describe", "node", "node-a")
    assert "Name:               node-a" in described
    allocatable = described.split("Allocatable:")[1].split("System Info:")[0].split()
    assert allocatable == ["cpu:", "4", "memory:", "8Gi", "pods:", "110"]


def test_apply_creates_then_patches_with_last_applied(cluster: Cluster) -> None:
    first = cluster.ok("apply", "-f", "-", stdin=POD.format(name="applied", app="one"))
    assert first.strip() == "pod/applied created"
    again = cluster.ok("apply", "-f", "-", stdin=POD.format(name="applied", app="one"))
    assert again.strip() == "pod/applied unchanged"
    changed = cluster.ok("apply", "-f", "-", stdin=POD.format(name="applied", app="two"))
    assert changed.strip() == "pod/applied configured"
    obj = json.loads(cluster.ok("get", "pod", "applied", "-o", "json"))
    assert obj["metadata"]["labels"] == {"app": "two"}
    last = json.loads(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    assert last["metadata"]["labels"] == {"app": "two"}


def test_label_and_select(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=POD.format(name="labelled", app="sel"))
    assert cluster.ok("label", "pod", "labelled", "tier=web").strip() == "pod/labelled labeled"
    selected = cluster.ok("get", "pods", "-l", "tier=web", "-o", "name").split()
    assert selected == ["pod/labelled"]
    clash = cluster.kubectl("label", "pod", "labelled", "tier=db")
    assert clash.returncode == 1
    assert "'tier' already has a value (web), and --overwrite is false" in clash.stderr


def test_patch_like_edit(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=POD.format(name="edited", app="e"))
    merge = '{"metadata":{"annotations":{"owner":"team-a"}}}'
    assert "patched" in cluster.ok("patch", "pod", "edited", "--type=merge", "-p", merge)
    json_patch = '[{"op":"add","path":"/metadata/labels/extra","value":"yes"}]'
    cluster.ok("patch", "pod", "edited", "--type=json", "-p", json_patch)
    obj = json.loads(cluster.ok("get", "pod", "edited", "-o", "json"))
    assert obj["metadata"]["annotations"]["owner"] == "team-a"
    assert obj["metadata"]["labels"] == {"app": "e", "extra": "yes"}


def test_errors_read_as_from_kube_apiserver(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=POD.format(name="twice", app="t"))
    again = cluster.kubectl("create", "-f", "-", stdin=POD.format(name="twice", app="t"))
    assert again.returncode == 1
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": pods "twice" already '
        "exists" in again.stderr
    )
    bad = POD.format(name="Bad_Name", app="t")
    invalid = cluster.kubectl("create", "-f", "-", stdin=bad)
    assert invalid.returncode == 1
    assert 'The Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"' in (
        invalid.stderr
    )
    missing = cluster.kubectl("delete", "configmap", "nothing-here")
    assert 'Error from server (NotFound): configmaps "nothing-here" not found' in missing.stderr


def test_a_pod_without_a_spec_is_refused_for_its_missing_containers(cluster: Cluster) -> None:
    """Go decodes an absent spec as an empty PodSpec, which is defaulted and then validated:
    the one thing it lacks is containers."""
    for spec in ("", "spec: null\n"):
        refused = cluster.kubectl(
            "create",
            "-f",
            "-",
            stdin=f"apiVersion: v1\nkind: Pod\nmetadata: {{name: bare}}\n{spec}",
        )
        assert refused.returncode == 1
        assert refused.stderr == ('The Pod "bare" is invalid: spec.containers: Required value\n'), (
            refused.stderr
        )


def test_a_body_with_a_duplicate_field_is_refused_when_strict(cluster: Cluster) -> None:
    # kubectl writes what it read again, so a manifest's repeats never reach the server; a raw
    # body keeps them, and kube-apiserver's strict decoder names them.
    manifest = cluster.workdir / "duplicate.json"
    manifest.write_text(
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup"}}'
    )
    path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict"
    refused = cluster.kubectl("create", "--raw", path, "-f", str(manifest))
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        'Error from server (BadRequest): ConfigMap in version "v1" cannot be handled as a '
        'ConfigMap: strict decoding error: duplicate field "metadata.name"'
    )


def test_create_and_delete_a_namespace(cluster: Cluster) -> None:
    assert cluster.ok("create", "ns", "team").strip() == "namespace/team created"
    cluster.ok("create", "configmap", "settings", "-n", "team", "--from-literal=a=b")
    assert cluster.ok("get", "ns", "team").splitlines()[1].split()[:2] == ["team", "Active"]
    assert cluster.ok("delete", "ns", "team").strip() == 'namespace "team" deleted'
    gone = cluster.kubectl("get", "ns", "team")
    assert 'namespaces "team" not found' in gone.stderr


def test_get_watch_sees_an_added_pod(cluster: Cluster) -> None:
    watcher = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "get",
            "pods",
            "-n",
            "kube-public",
            "-w",
            "--request-timeout=20s",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        cluster.ok("create", "-n", "kube-public", "-f", "-", stdin=POD.format(name="seen", app="w"))
        assert watcher.stdout is not None
        assert watcher.stdout.readline().split() == [
            "EVENT",
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
        ]
        assert watcher.stdout.readline().split()[:4] == ["ADDED", "seen", "0/1", "Pending"]
    finally:
        watcher.kill()
        watcher.wait()


def test_get_watch_sees_a_deleted_pod_terminate(cluster: Cluster) -> None:
    cluster.ok("create", "ns", "watched")
    cluster.ok("create", "-n", "watched", "-f", "-", stdin=POD.format(name="brief", app="w"))
    watcher = subprocess.Popen(
        [
            KUBECTL,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "get",
            "pods",
            "-n",
            "watched",
            "-w",
            "--request-timeout=20s",
            "--output-watch-events",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().split()[:2] == ["EVENT", "NAME"]
        assert watcher.stdout.readline().split()[:4] == ["ADDED", "brief", "0/1", "Pending"]
        cluster.ok("delete", "pod", "brief", "-n", "watched")
        # Deleted at once (it never ran), yet marked first: watchers see it terminate.
        assert watcher.stdout.readline().split()[:4] == ["MODIFIED", "brief", "0/1", "Terminating"]
        assert watcher.stdout.readline().split()[:4] == ["DELETED", "brief", "0/1", "Terminating"]
    finally:
        watcher.kill()
        watcher.wait()


def test_get_watch_ages_each_row_when_its_event_comes(cluster: Cluster) -> None:
    cluster.ok("create", "ns", "aging")
    cluster.ok("create", "-n", "aging", "-f", "-", stdin=POD.format(name="aged", app="w"))
    pod = json.loads(cluster.ok("get", "pod", "aged", "-n", "aging", "-o", "json"))
    created = parse_time(pod["metadata"]["creationTimestamp"])
    get = [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "get", "pods", "-n", "aging"]
    watcher = subprocess.Popen(
        [*get, "-w", "--request-timeout=20s", "--output-watch-events"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        assert watcher.stdout.readline().split()[:2] == ["EVENT", "NAME"]
        assert watcher.stdout.readline().split()[:2] == ["ADDED", "aged"]
        # Let the pod grow older than it was when the watch began, then change it: the row
        # of that event shows the pod's age when the event was sent, not the watch's start.
        time.sleep(2.5)
        before = time.time()
        cluster.ok("label", "pod", "aged", "-n", "aging", "tier=old")
        row = watcher.stdout.readline().split()
        after = time.time()
    finally:
        watcher.kill()
        watcher.wait()
    assert row[:2] == ["MODIFIED", "aged"]
    age = row[5]
    assert age.endswith("s") and age[:-1].isdigit(), row
    assert int(before - created) <= int(age[:-1]) <= int(after - created)


def test_api_resources_lists_kinds_and_short_names(cluster: Cluster) -> None:
    rows = [line.split() for line in cluster.ok("api-resources").splitlines()]
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    by_name: dict[str, list[str]] = {}
    for row in rows[1:]:  # the core group first; metrics.k8s.io also has pods and nodes
        by_name.setdefault(row[0], row)
    assert by_name["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert by_name["deployments"] == ["deployments", "deploy", "apps/v1", "true", "Deployment"]
    assert by_name["nodes"] == ["nodes", "no", "v1", "false", "Node"]


def test_version_names_pinnace(cluster: Cluster) -> None:
    server = json.loads(cluster.ok("version", "-o", "json"))["serverVersion"]
    assert (server["major"], server["minor"]) == ("1", "32")
    assert "pinnace" in server["gitVersion"]


def test_replace_round_trips_what_get_returned(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=POD.format(name="replaced", app="r"))
    current = json.loads(cluster.ok("get", "pod", "replaced", "-o", "json"))
    current["metadata"]["annotations"] = {"note": "replaced"}
    out = cluster.ok("replace", "-f", "-", stdin=json.dumps(current))
    assert out.strip() == "pod/replaced replaced"
    stale = cluster.kubectl("replace", "-f", "-", stdin=json.dumps(current))
    assert stale.returncode == 1
    assert (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be '
        'fulfilled on pods "replaced": the object has been modified' in stale.stderr
    )


def test_server_side_apply_and_its_conflicts(cluster: Cluster) -> None:
    manifest = POD.format(name="ssa", app="one")
    assert cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest).strip() == (
        "pod/ssa serverside-applied"
    )
    cluster.ok("label", "pod", "ssa", "app=taken", "--overwrite")
    changed = POD.format(name="ssa", app="two")
    conflict = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=changed)
    assert conflict.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl-label"' in conflict.stderr
    assert ".metadata.labels.app" in conflict.stderr
    cluster.ok("apply", "--server-side", "--force-conflicts", "-f", "-", stdin=changed)
    assert cluster.ok("get", "pod", "ssa", "-o", "jsonpath={.metadata.labels.app}") == "two"


def test_explain_reads_the_openapi_documents(cluster: Cluster) -> None:
    explained = cluster.ok("explain", "pod.spec.nodeName")
    assert "KIND:       Pod" in explained
    assert "FIELD: nodeName <string>" in explained
    # The same from OpenAPI v2, which kubectl reads in its protobuf form.
    legacy = cluster.ok("explain", "--output=plaintext-openapiv2", "deployment.spec.strategy")
    assert "KIND:     Deployment" in legacy
    assert "RESOURCE: strategy <Object>" in legacy
    assert "   rollingUpdate\t<Object>" in legacy


def test_explain_reads_the_vertical_pod_autoscalers_schema(cluster: Cluster) -> None:
    """As on a cluster with the VPA's CRD installed: its structural schema is published."""
    explained = cluster.ok("explain", "vpa.spec")
    assert "KIND:       VerticalPodAutoscaler" in explained
    assert "targetRef\t<Object> -required-" in explained
    mode = cluster.ok("explain", "vpa.spec.updatePolicy.updateMode")
    assert "FIELD: updateMode <string>" in mode
    assert "ENUM:\n    Off\n    Initial\n    Recreate\n    InPlaceOrRecreate\n    Auto" in mode
    legacy = cluster.ok("explain", "--output=plaintext-openapiv2", "vpa.spec.resourcePolicy")
    assert "   containerPolicies\t<[]Object>" in legacy


def test_typed_client_creates_sent_as_protobuf(cluster: Cluster) -> None:
    created = cluster.ok("create", "deployment", "proto", "--image=nginx:1.27", "--replicas=0")
    assert created.strip() == "deployment.apps/proto created"
    spec = json.loads(cluster.ok("get", "deployment", "proto", "-o", "json"))["spec"]
    assert spec["replicas"] == 0
    assert spec["selector"] == {"matchLabels": {"app": "proto"}}
    assert spec["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    cluster.ok("create", "job", "once", "--image=busybox", "--", "echo", "hi")
    job = json.loads(cluster.ok("get", "job", "once", "-o", "json"))
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    cluster.ok("create", "pdb", "budget", "--selector=app=proto", "--max-unavailable=50%")
    budget = json.loads(cluster.ok("get", "pdb", "budget", "-o", "json"))["spec"]
    assert budget == {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "proto"}}}


def test_lists_across_namespaces(cluster: Cluster) -> None:
    cluster.ok("create", "-n", "kube-system", "-f", "-", stdin=POD.format(name="sys", app="a"))
    rows = [line.split()[:2] for line in cluster.ok("get", "pods", "-A").splitlines()]
    assert rows[0] == ["NAMESPACE", "NAME"]
    assert ["kube-system", "sys"] in rows[1:]


def test_graceful_then_forced_delete_of_a_bound_pod(cluster: Cluster) -> None:
    bound = POD.format(name="graceful", app="g") + "  nodeName: node-x\n"
    cluster.ok("create", "-f", "-", stdin=bound)
    assert cluster.ok("delete", "pod", "graceful", "--wait=false").strip() == (
        'pod "graceful" deleted'
    )
    grace = cluster.ok(
        "get", "pod", "graceful", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"
    )
    assert grace == "30"
    forced = cluster.ok("delete", "pod", "graceful", "--grace-period=0", "--force")
    assert forced.strip() == 'pod "graceful" force deleted'
    assert "NotFound" in cluster.kubectl("get", "pod", "graceful").stderr


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  labels: {labels}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
{containers}"""


def containers(*names: str) -> str:
    return "".join(f"      - {{name: {name}, image: 'nginx:1.27'}}\n" for name in names)


def test_client_side_reapply_removes_what_the_manifest_dropped(cluster: Cluster) -> None:
    first = DEPLOYMENT.format(
        name="reapplied",
        labels="{app: reapplied, tier: web}",
        replicas=2,
        containers=containers("main", "side"),
    )
    assert cluster.ok("apply", "-f", "-", stdin=first).strip() == (
        "deployment.apps/reapplied created"
    )
    second = DEPLOYMENT.format(
        name="reapplied", labels="{app: reapplied}", replicas=4, containers=containers("main")
    )
    assert cluster.ok("apply", "-f", "-", stdin=second).strip() == (
        "deployment.apps/reapplied configured"
    )
    obj = json.loads(cluster.ok("get", "deployment", "reapplied", "-o", "json"))
    assert obj["metadata"]["labels"] == {"app": "reapplied"}
    assert obj["spec"]["replicas"] == 4
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["main"]
    assert obj["metadata"]["generation"] == 2


def test_server_side_reapply_with_changes(cluster: Cluster) -> None:
    manifest = DEPLOYMENT.format(
        name="ssa-deploy", labels="{app: ssa-deploy}", replicas=1, containers=containers("main")
    )
    cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest)
    unchanged = cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest)
    assert unchanged.strip() == "deployment.apps/ssa-deploy serverside-applied"
    assert cluster.ok("get", "deploy", "ssa-deploy", "-o", "jsonpath={.metadata.generation}") == (
        "1"
    )
    changed = manifest.replace("replicas: 1", "replicas: 3").replace(
        containers("main"), containers("main", "side")
    )
    cluster.ok("apply", "--server-side", "-f", "-", stdin=changed)
    spec = json.loads(cluster.ok("get", "deploy", "ssa-deploy", "-o", "json"))["spec"]
    assert spec["replicas"] == 3
    assert [c["name"] for c in spec["template"]["spec"]["containers"]] == ["main", "side"]
    # Dropping a field this manager owns removes it.
    cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest)
    spec = json.loads(cluster.ok("get", "deploy", "ssa-deploy", "-o", "json"))["spec"]
    assert [c["name"] for c in spec["template"]["spec"]["containers"]] == ["main"]


def test_get_output_formats(cluster: Cluster) -> None:
    cluster.ok("create", "-f", "-", stdin=POD.format(name="formats", app="fmt"))
    as_yaml = cluster.ok("get", "pod", "formats", "-o", "yaml")
    assert as_yaml.startswith("apiVersion: v1\nkind: Pod\nmetadata:\n")
    assert "  name: formats\n" in as_yaml
    assert "  - image: nginx:1.27\n" in as_yaml
    jsonpath = "{.metadata.name} {.spec.containers[0].resources.requests.cpu} {.status.phase}"
    assert cluster.ok("get", "pod", "formats", "-o", f"jsonpath={jsonpath}") == (
        "formats 100m Pending"
    )
    names = cluster.ok("get", "pods", "-l", "app=fmt", "-o", "jsonpath={.items[*].metadata.name}")
    assert names == "formats"
    columns = cluster.ok(
        "get",
        "pod",
        "formats",
        "-o",
        "custom-columns=NAME:.metadata.name,IMAGE:.spec.containers[0].image",
    ).splitlines()
    assert [line.split() for line in columns] == [["NAME", "IMAGE"], ["formats", "nginx:1.27"]]


def test_create_configmap_from_literals_and_a_file(cluster: Cluster) -> None:
    (cluster.workdir / "app.properties").write_text("color=blue\nsize=10\n")
    out = cluster.ok(
        "create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3"
    )
    assert out.strip() == "configmap/settings created"
    cluster.ok("create", "configmap", "from-file", "--from-file=app.properties")
    data = json.loads(cluster.ok("get", "cm", "settings", "-o", "json"))["data"]
    assert data == {"mode": "fast", "level": "3"}
    from_file = json.loads(cluster.ok("get", "cm", "from-file", "-o", "json"))["data"]
    assert from_file == {"app.properties": "color=blue\nsize=10\n"}
    rows = [
        line.split()[:2] for line in cluster.ok("get", "cm", "settings", "from-file").splitlines()
    ]
    assert rows == [["NAME", "DATA"], ["settings", "2"], ["from-file", "1"]]


def test_annotate_overwrite_and_remove(cluster: Cluster) -> None:
    cluster.ok("create", "configmap", "noted", "--from-literal=a=b")
    assert cluster.ok("annotate", "cm", "noted", "owner=team-a").strip() == (
        "configmap/noted annotated"
    )
    clash = cluster.kubectl("annotate", "cm", "noted", "owner=team-b")
    assert clash.returncode == 1
    assert "'owner' already has a value (team-a)" in clash.stderr
    cluster.ok("annotate", "cm", "noted", "owner=team-b", "--overwrite")
    path = "jsonpath={.metadata.annotations.owner}"
    assert cluster.ok("get", "cm", "noted", "-o", path) == "team-b"
    cluster.ok("annotate", "cm", "noted", "owner-")
    meta = json.loads(cluster.ok("get", "cm", "noted", "-o", "json"))["metadata"]
    assert "owner" not in meta.get("annotations", {})


def test_patch_types(cluster: Cluster) -> None:
    manifest = DEPLOYMENT.format(
        name="patched", labels="{app: patched}", replicas=1, containers=containers("main")
    )
    cluster.ok("create", "-f", "-", stdin=manifest)
    # Strategic merge (the default): containers merge by name.
    image = '{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}}}'
    assert cluster.ok("patch", "deploy", "patched", "-p", image).strip() == (
        "deployment.apps/patched patched"
    )
    sidecar = '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}'
    cluster.ok("patch", "deploy", "patched", "-p", sidecar)
    images = "jsonpath={range .spec.template.spec.containers[*]}{.name}={.image} {end}"
    assert cluster.ok("get", "deploy", "patched", "-o", images).split() == [
        "side=busybox",
        "main=nginx:1.28",
    ]
    # Merge patch: lists are replaced whole.
    merge = (
        '{"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"only","image":"x"}]}}}}'
    )
    cluster.ok("patch", "deploy", "patched", "--type=merge", "-p", merge)
    assert cluster.ok("get", "deploy", "patched", "-o", images).split() == ["only=x"]
    # JSON patch: operations, applied in order.
    ops = (
        '[{"op":"test","path":"/spec/replicas","value":2},'
        '{"op":"replace","path":"/spec/replicas","value":5},'
        '{"op":"add","path":"/metadata/labels/tier","value":"web"}]'
    )
    cluster.ok("patch", "deploy", "patched", "--type=json", "-p", ops)
    obj = json.loads(cluster.ok("get", "deploy", "patched", "-o", "json"))
    assert obj["spec"]["replicas"] == 5
    assert obj["metadata"]["labels"] == {"app": "patched", "tier": "web"}
    failed = cluster.kubectl(
        "patch",
        "deploy",
        "patched",
        "--type=json",
        "-p",
        '[{"op":"test","path":"/spec/replicas","value":9}]',
    )
    assert failed.returncode == 1
    assert "The request is invalid" in failed.stderr
    invalid = cluster.kubectl(
        "patch", "deploy", "patched", "--type=merge", "-p", '{"spec":{"replicas":-1}}'
    )
    assert invalid.stderr.strip() == (
        'The Deployment "patched" is invalid: spec.replicas: Invalid value: -1: must be greater '
        "than or equal to 0"
    )


def test_describe_namespace(cluster: Cluster) -> None:
    cluster.ok("create", "namespace", "described")
    lines = cluster.ok("describe", "namespace", "described").splitlines()
    assert lines[:4] == [
        "Name:         described",
        "Labels:       kubernetes.io/metadata.name=described",
        "Annotations:  <none>",
        "Status:       Active",
    ]
    assert "No resource quota." in lines
    assert "No LimitRange resource." in lines


def test_create_deployment_and_scale_it(cluster: Cluster) -> None:
    created = cluster.ok("create", "deployment", "web", "--image=nginx:1.27")
    assert created.strip() == "deployment.apps/web created"
    rows = [line.split() for line in cluster.ok("get", "deployment", "web").splitlines()]
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    # the deployment controller makes its replica set at once; with no nodes nothing runs
    assert rows[1][:2] + rows[1][3:4] == ["web", "0/1", "0"]
    assert cluster.ok("scale", "deployment", "web", "--replicas=3").strip() == (
        "deployment.apps/web scaled"
    )
    assert cluster.ok("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}") == "3"
    stale = cluster.kubectl("scale", "deployment", "web", "--replicas=1", "--current-replicas=2")
    assert stale.returncode == 1
    assert "Expected replicas to be 2, was 3" in stale.stderr
    wide = cluster.ok("get", "deployment", "web", "-o", "wide").splitlines()
    assert wide[0].split()[5:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[1:2] + wide[1].split()[5:] == ["0/3", "nginx", "nginx:1.27", "app=web"]


def test_kubectl_scale_takes_the_replicas_from_a_server_side_applier(cluster: Cluster) -> None:
    manifest = DEPLOYMENT.format(
        name="applied-scaled",
        labels="{app: applied-scaled}",
        replicas=2,
        containers=containers("main"),
    )
    cluster.ok("apply", "--server-side", "-f", "-", stdin=manifest)
    cluster.ok("scale", "deployment", "applied-scaled", "--replicas=3")
    managed = json.loads(
        cluster.ok("get", "deployment", "applied-scaled", "-o", "json", "--show-managed-fields")
    )["metadata"]["managedFields"]
    scaled = [e for e in managed if e.get("subresource") == "scale"]
    assert [(e["manager"], e["operation"], e["fieldsV1"]) for e in scaled] == [
        ("kubectl", "Update", {"f:spec": {"f:replicas": {}}})
    ]
    applied = next(e for e in managed if e["operation"] == "Apply")
    assert "f:replicas" not in applied["fieldsV1"]["f:spec"]
    # Applying the old count again is a conflict with the scale, as in v1.32.
    conflict = cluster.kubectl("apply", "--server-side", "-f", "-", stdin=manifest)
    assert conflict.returncode == 1
    assert (
        'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" '
        "using apps/v1: .spec.replicas"
    ) in conflict.stderr
    assert cluster.ok("get", "deployment", "applied-scaled", "-o", "jsonpath={.spec.replicas}") == (
        "3"
    )


def test_diff_shows_what_apply_would_change(cluster: Cluster) -> None:
    manifest = DEPLOYMENT.format(
        name="diffed", labels="{app: diffed}", replicas=1, containers=containers("main")
    )
    cluster.ok("apply", "-f", "-", stdin=manifest)
    same = cluster.kubectl("diff", "-f", "-", stdin=manifest)
    assert (same.returncode, same.stdout) == (0, "")
    changed = cluster.kubectl(
        "diff", "-f", "-", stdin=manifest.replace("replicas: 1", "replicas: 3")
    )
    assert changed.returncode == 1, changed.stderr
    lines = changed.stdout.splitlines()
    assert "-  replicas: 1" in lines
    assert "+  replicas: 3" in lines
    dry = cluster.ok(
        "apply", "--dry-run=server", "-f", "-", stdin=manifest.replace("replicas: 1", "replicas: 3")
    )
    assert dry.strip() == "deployment.apps/diffed configured (server dry run)"
    assert cluster.ok("get", "deploy", "diffed", "-o", "jsonpath={.spec.replicas}") == "1"


def test_diff_of_an_object_without_annotations_finds_nothing(cluster: Cluster) -> None:
    # kubectl diff's patch of an object it did not apply carries `annotations: {}`; Go's
    # omitempty drops an empty map, so kube-apiserver's dry run returns the object unchanged.
    cluster.ok("create", "configmap", "bare", "--from-literal=k=v")
    live = cluster.ok("get", "configmap", "bare", "-o", "yaml")
    same = cluster.kubectl("diff", "-f", "-", stdin=live)
    assert (same.returncode, same.stdout) == (0, ""), same.stdout + same.stderr
    cluster.ok("label", "configmap", "bare", "tier=web")
    cluster.ok("label", "configmap", "bare", "tier-")
    cluster.ok("annotate", "configmap", "bare", "note=x")
    cluster.ok("annotate", "configmap", "bare", "note-")
    shown = json.loads(cluster.ok("get", "configmap", "bare", "-o", "json"))["metadata"]
    assert "labels" not in shown and "annotations" not in shown
