"""`pinnace up --tls` as a user meets it: kubectl and the Python client over HTTPS with the
kubeconfig it writes (the cluster CA, kubernetes-admin's client certificate), static token
users who get kube-apiserver's 401 and 403 until a binding lets them, `kubectl auth can-i`,
impersonation, the escalation check, and the refusal to serve beyond loopback without TLS."""

from __future__ import annotations

import base64
import hashlib
import json
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.support import eventually

TOKENS = 'tok-alice,alice,1001\ntok-bob,bob,1002,"devs,qa"\n'


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    workdir = tmp_path_factory.mktemp("pinnace-tls")
    (workdir / "tokens.csv").write_text(TOKENS)
    running = launch(
        workdir,
        "--data-dir",
        str(workdir / "data"),
        flags=("--tls", "--token-auth-file", "tokens.csv", "--no-scheduler", "--nodes", "1"),
    )
    yield running
    stop(running)


def as_token(cluster: Cluster, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with a kubeconfig that trusts the cluster CA and presents `token`."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token}
    path = cluster.workdir / f"kubeconfig-{hashlib.sha256(token.encode()).hexdigest()[:16]}"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [KUBECTL, "--kubeconfig", str(path), "--request-timeout=20s", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cluster.workdir,
    )


def refused(cluster: Cluster, token: str, *args: str) -> str:
    """kubectl's error when `token` is refused; "" while it still works (kube-apiserver keeps a
    token's successful authentication for 10 s)."""
    done = as_token(cluster, token, *args)
    return done.stderr if done.returncode else ""


def test_kubectl_works_over_tls_as_kubernetes_admin(secure: Cluster) -> None:
    assert secure.url.startswith("https://127.0.0.1:")
    config = yaml.safe_load(secure.kubeconfig.read_text())
    assert "certificate-authority-data" in config["clusters"][0]["cluster"]
    assert "default" in secure.ok("get", "namespaces")
    whoami = secure.ok("auth", "whoami")
    assert "kubernetes-admin" in whoami and "system:masters" in whoami
    # Pods trust the API server through kube-root-ca.crt: the CA the kubeconfig trusts.
    published = secure.ok("get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}")
    trusted = config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert published.strip() == base64.b64decode(trusted).decode().strip()


def test_a_token_user_is_forbidden_until_a_rolebinding_lets_it(secure: Cluster) -> None:
    denied = as_token(secure, "tok-alice", "get", "pods", "-n", "kube-public")
    assert denied.returncode == 1
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource '
        '"pods" in API group "" in the namespace "kube-public"'
    )
    before = secure.kubectl("auth", "can-i", "list", "pods", "-n", "kube-public", "--as", "alice")
    assert (before.returncode, before.stdout) == (1, "no\n")
    secure.ok(
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "kube-public",
    )
    allowed = as_token(secure, "tok-alice", "get", "pods", "-n", "kube-public")
    assert allowed.returncode == 0, allowed.stderr
    assert (
        as_token(secure, "tok-alice", "auth", "can-i", "list", "pods", "-n", "kube-public").stdout
        == "yes\n"
    )
    # view reads, it does not write, and it grants nothing beyond its namespace
    no = as_token(secure, "tok-alice", "auth", "can-i", "delete", "pods", "-n", "kube-public")
    assert (no.returncode, no.stdout) == (1, "no\n")
    assert (
        as_token(secure, "tok-alice", "auth", "can-i", "list", "pods", "-n", "default").stdout
        == "no\n"
    )


def test_view_lets_kubectl_top_read_the_metrics_api_as_metrics_servers_role_does(
    secure: Cluster,
) -> None:
    """metrics-server's components.yaml makes system:aggregated-metrics-reader, which joins
    view, edit and admin; Pinnace serves metrics.k8s.io in its place, so it makes the role."""
    role = json.loads(
        secure.ok("get", "clusterrole", "system:aggregated-metrics-reader", "-o", "json")
    )
    assert role["rules"] == [
        {
            "apiGroups": ["metrics.k8s.io"],
            "resources": ["pods", "nodes"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    secure.ok("create", "namespace", "metrics-view")
    secure.ok(
        "create",
        "rolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
        "-n",
        "metrics-view",
    )
    can_i = ("auth", "can-i", "list", "pods.metrics.k8s.io", "-n", "metrics-view")
    assert eventually(lambda: as_token(secure, "tok-bob", *can_i).stdout == "yes\n")
    top = as_token(secure, "tok-bob", "top", "pods", "-n", "metrics-view")
    assert "forbidden" not in top.stderr, top.stderr
    nodes = as_token(secure, "tok-bob", "top", "nodes")
    assert nodes.stderr.strip() == (
        'Error from server (Forbidden): nodes.metrics.k8s.io is forbidden: User "bob" cannot '
        'list resource "nodes" in API group "metrics.k8s.io" at the cluster scope'
    )


def test_can_i_answers_for_groups_and_lists_the_rules(secure: Cluster) -> None:
    secure.ok("create", "clusterrolebinding", "devs-edit", "--clusterrole=edit", "--group=devs")
    assert (
        as_token(secure, "tok-bob", "auth", "can-i", "create", "deployments.apps").stdout == "yes\n"
    )
    listed = as_token(secure, "tok-bob", "auth", "can-i", "--list", "-n", "default").stdout
    lines = {" ".join(line.split()) for line in listed.splitlines()}
    assert "Resources Non-Resource URLs Resource Names Verbs" in lines
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in lines
    assert "[/healthz] [] [get]" in lines
    assert any(
        line.startswith("deployments.apps [] [] [create update patch delete") for line in lines
    )
    admin = secure.ok("auth", "can-i", "--list")
    assert "*.* [] [] [*]" in {" ".join(line.split()) for line in admin.splitlines()}


def test_a_bad_token_is_unauthorized(secure: Cluster) -> None:
    done = as_token(secure, "not-a-token", "get", "pods")
    assert done.returncode == 1
    assert "error: You must be logged in to the server (Unauthorized)" in done.stderr


def test_impersonation_needs_the_impersonate_verb(secure: Cluster) -> None:
    done = as_token(secure, "tok-alice", "get", "pods", "--as", "bob")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        'Error from server (Forbidden): users "bob" is forbidden: User "alice" cannot '
        'impersonate resource "users" in API group "" at the cluster scope'
    )
    assert "bob" in secure.ok("auth", "whoami", "--as", "bob")


def test_the_docs_token_users_beside_the_admins_certificate(secure: Cluster) -> None:
    """docs/security.md's flow: `--token` with the admin's kubeconfig is still
    kubernetes-admin (kube-apiserver tries client certificates before bearer tokens); a
    kubeconfig user that holds only the token is the token's user."""
    config = secure.workdir / "kubeconfig-docs"
    config.write_text(secure.kubeconfig.read_text())

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(config), "--request-timeout=20s", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=secure.workdir,
        )

    assert "kubernetes-admin" in kubectl("--token=tok-alice", "auth", "whoami").stdout
    assert kubectl("config", "set-credentials", "alice", "--token=tok-alice").returncode == 0
    assert "alice" in kubectl("--user=alice", "auth", "whoami").stdout
    denied = kubectl("--user=alice", "get", "pods", "-n", "kube-node-lease")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "alice" cannot list resource '
        '"pods" in API group "" in the namespace "kube-node-lease"'
    )


def test_roles_and_bindings_through_kubectl_with_the_escalation_check(secure: Cluster) -> None:
    secure.ok("create", "role", "pod-reader", "--verb=get,list", "--resource=pods", "-n", "default")
    secure.ok("create", "clusterrole", "node-reader", "--verb=get", "--resource=nodes")
    secure.ok(
        "create",
        "role",
        "rbac-writer",
        "--verb=create",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
        "-n",
        "default",
    )
    secure.ok(
        "create", "rolebinding", "alice-rbac", "--role=rbac-writer", "--user=alice", "-n", "default"
    )
    escalating = as_token(
        secure,
        "tok-alice",
        "create",
        "role",
        "cm-reader",
        "--verb=get",
        "--resource=configmaps",
        "-n",
        "default",
    )
    assert escalating.returncode == 1
    assert escalating.stderr.startswith(
        'Error from server (Forbidden): roles.rbac.authorization.k8s.io "cm-reader" is forbidden: '
        'user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC '
        "permissions not currently held:\n"
        '{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}'
    )
    table = secure.ok("get", "rolebindings", "-n", "default", "-o", "wide")
    assert "alice-rbac" in table and "Role/rbac-writer" in table
    assert "node-reader" in secure.ok("get", "clusterroles")


def test_the_python_clients_rbac_flow(secure: Cluster, tmp_path: Path) -> None:
    """kubernetes-client/python's e2e test_create_rbac_role_from_yaml, over TLS."""
    manifest = tmp_path / "rbac-role.yaml"
    manifest.write_text(
        "kind: Role\napiVersion: rbac.authorization.k8s.io/v1\n"
        "metadata:\n  namespace: default\n  name: e2e-pod-reader\n"
        'rules:\n- apiGroups: [""]\n  resources: ["pods"]\n  verbs: ["get", "watch", "list"]\n'
    )
    script = f"""
from kubernetes import client, config, utils
api_client = config.new_client_from_config({str(secure.kubeconfig)!r})
utils.create_from_yaml(api_client, {str(manifest)!r}, verbose=True)
rbac = client.RbacAuthorizationV1Api(api_client)
role = rbac.read_namespaced_role(name="e2e-pod-reader", namespace="default")
assert role.metadata.name == "e2e-pod-reader" and role.rules[0].resources[0] == "pods"
rbac.delete_namespaced_role(name="e2e-pod-reader", namespace="default", body={{}})
names = [r.metadata.name for r in rbac.list_cluster_role().items]
assert "cluster-admin" in names and "system:node" in names
review = client.AuthorizationV1Api(api_client).create_self_subject_access_review(
    client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(verb="delete", resource="nodes"))))
assert review.status.allowed is True
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.stdout == "role created.\nok\n", done.stderr


def test_serving_beyond_loopback_without_tls_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pinnace.cli.main",
            "up",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--in-memory",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stderr == (
        "pinnace up: refusing to serve 0.0.0.0 without TLS and authentication: give --tls "
        "(or --insecure to let anyone who can connect change everything)\n"
    )


def _anonymous_get(cluster: Cluster, path: str) -> tuple[int, dict[str, object] | str]:
    """GET `path` with no credentials, trusting the cluster CA."""
    context = ssl.create_default_context(cafile=str(cluster.workdir / "data" / "pki" / "ca.crt"))
    try:
        with urllib.request.urlopen(cluster.url + path, context=context, timeout=20) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_anonymous_requests_see_public_paths_only(secure: Cluster) -> None:
    assert _anonymous_get(secure, "/healthz") == (200, "ok")
    code, status = _anonymous_get(secure, "/api/v1/pods")
    assert code == 403
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods is forbidden: User "system:anonymous" cannot list resource "pods" in '
        'API group "" at the cluster scope',
        "reason": "Forbidden",
        "details": {"kind": "pods"},
        "code": 403,
    }


def test_a_refusal_before_any_handler_is_indented_for_curl_on_every_path(secure: Cluster) -> None:
    context = ssl.create_default_context(cafile=str(secure.workdir / "data" / "pki" / "ca.crt"))
    for path in ("/metrics", "/openapi/v2", "/apis/nothing"):
        request = urllib.request.Request(secure.url + path, headers={"User-Agent": "curl/8.5.0"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, context=context, timeout=20)
        body = refused.value.read().decode()
        assert refused.value.code == 403
        assert body.startswith('{\n  "kind": "Status",\n'), (path, body)
        assert (
            f'"message": "forbidden: User \\"system:anonymous\\" cannot get path \\"{path}\\""'
            in body
        )


def test_the_ca_is_kept_across_restarts(tmp_path: Path) -> None:
    first = launch(tmp_path, "--data-dir", str(tmp_path / "data"), flags=("--tls",))
    ca = (tmp_path / "data" / "pki" / "ca.crt").read_bytes()
    stop(first)
    second = launch(tmp_path, "--data-dir", str(tmp_path / "data"), flags=("--tls",))
    try:
        assert (tmp_path / "data" / "pki" / "ca.crt").read_bytes() == ca
        assert "default" in second.ok("get", "namespaces")
    finally:
        stop(second)


def test_a_labelled_cluster_role_joins_view_and_so_edit_and_admin(secure: Cluster) -> None:
    secure.ok("create", "clusterrole", "leases-reader", "--verb=get,list", "--resource=leases")
    secure.ok(
        "label", "clusterrole", "leases-reader", "rbac.authorization.k8s.io/aggregate-to-view=true"
    )
    want = {"verbs": ["get", "list"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}

    def aggregated(role: str) -> bool:
        return want in json.loads(secure.ok("get", "clusterrole", role, "-o", "json"))["rules"]

    for role in ("view", "edit", "admin"):
        assert eventually(lambda role=role: aggregated(role) or None)


def test_without_tls_everyone_is_admin_and_can_i_answers_for_whom_it_impersonates(
    cluster: Cluster,
) -> None:
    assert cluster.ok("auth", "can-i", "delete", "nodes") == "yes\n"
    assert "system:unsecured" in cluster.ok("auth", "whoami")
    done = cluster.kubectl("auth", "can-i", "list", "pods", "--as", "alice")
    assert (done.returncode, done.stdout) == (1, "no\n")
    denied = cluster.kubectl("get", "pods", "--as", "alice")
    assert 'User "alice" cannot list resource "pods"' in denied.stderr


def test_kubectl_exec_over_tls_authenticates_the_websocket_and_authorizes_it_as_v1_32(
    secure: Cluster,
) -> None:
    node = secure.ok("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
    overrides = json.dumps({"spec": {"nodeName": node}})
    secure.ok("create", "namespace", "exec-demo")
    run = ["run", "shell", "-n", "exec-demo", "--image=busybox", f"--overrides={overrides}"]
    secure.ok(*run, "--", "sleep", "1d")
    secure.ok("wait", "--for=condition=Ready", "pod/shell", "-n", "exec-demo", "--timeout=30s")
    # The admin kubeconfig's client certificate authenticates the WebSocket too.
    assert secure.ok("exec", "shell", "-n", "exec-demo", "--", "printenv", "HOSTNAME") == "shell\n"
    # alice may get pods only: the WebSocket GET is refused, and so is kubectl's SPDY POST,
    # which is what it reports.
    secure.ok("create", "role", "peek", "-n", "exec-demo", "--verb=get", "--resource=pods")
    secure.ok("create", "rolebinding", "peek", "-n", "exec-demo", "--role=peek", "--user=alice")
    alice = ("exec", "shell", "-n", "exec-demo", "--", "printenv", "HOSTNAME")
    denied = as_token(secure, "tok-alice", *alice)
    assert denied.stderr == (
        'Error from server (Forbidden): pods "shell" is forbidden: User "alice" cannot create '
        'resource "pods/exec" in API group "" in the namespace "exec-demo"\n'
    )
    # In v1.32 the WebSocket upgrade (a GET) needs only `get` on pods/exec.
    secure.ok("create", "role", "exec-get", "-n", "exec-demo", "--verb=get", "--resource=pods/exec")
    binding = ("rolebinding", "exec-get", "-n", "exec-demo", "--role=exec-get", "--user=alice")
    secure.ok("create", *binding)
    allowed = as_token(secure, "tok-alice", *alice)
    assert (allowed.returncode, allowed.stdout) == (0, "shell\n"), allowed.stderr


def test_a_service_account_logs_in_with_a_token_kubectl_created(secure: Cluster) -> None:
    secure.ok("create", "serviceaccount", "robot", "-n", "default")
    secure.ok(
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
        "-n",
        "default",
    )
    token = secure.ok("create", "token", "robot", "-n", "default", "--duration=20m").strip()
    assert as_token(secure, token, "get", "pods", "-n", "default").returncode == 0
    denied = as_token(secure, token, "get", "pods", "-n", "kube-system")
    assert denied.stderr.strip() == (
        'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:default:'
        'robot" cannot list resource "pods" in API group "" in the namespace "kube-system"'
    )
    whoami = as_token(secure, token, "auth", "whoami", "-o", "json")
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:robot"
    assert info["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ]
    assert info["extra"]["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    script = f"""
from kubernetes import client
from kubernetes.client.rest import ApiException
configuration = client.Configuration()
configuration.host = {secure.url!r}
configuration.ssl_ca_cert = {str(secure.workdir / "data" / "pki" / "ca.crt")!r}
configuration.api_key = {{"authorization": "Bearer " + {token!r}}}
core = client.CoreV1Api(client.ApiClient(configuration))
print(len(core.list_namespaced_config_map("default").items) > 0)
try:
    core.create_namespaced_config_map("default", {{"metadata": {{"name": "x"}}}})
except ApiException as e:
    print(e.status, json.loads(e.body)["message"])
"""
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + script],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [
        "True",
        '403 configmaps is forbidden: User "system:serviceaccount:default:robot" cannot create '
        'resource "configmaps" in API group "" in the namespace "default"',
    ], done.stderr
    # kubectl's client-side validation fails on every review kind Pinnace serves (it goes on to
    # look for a CRD), before and after this change: not what is tested here.
    review = secure.ok(
        "create",
        "--validate=false",
        "-o",
        "json",
        "-f",
        "-",
        stdin=json.dumps(
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            }
        ),
    )
    reviewed = json.loads(review)["status"]
    assert reviewed["authenticated"] is True
    assert reviewed["user"]["username"] == "system:serviceaccount:default:robot"
    secure.ok("delete", "serviceaccount", "robot", "-n", "default")
    # Its last authentication is kept 10 s, as kube-apiserver keeps it; then it is refused.
    gone = eventually(lambda: refused(secure, token, "get", "pods", "-n", "default"))
    assert "error: You must be logged in to the server (Unauthorized)" in gone


SPARE_NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: spare\n"


def test_a_token_bound_to_a_node_names_it_and_dies_with_it(secure: Cluster) -> None:
    secure.ok("apply", "-f", "-", stdin=SPARE_NODE)
    uid = secure.ok("get", "node", "spare", "-o", "jsonpath={.metadata.uid}")
    token = secure.ok(
        "create", "token", "default", "--bound-object-kind", "Node", "--bound-object-name", "spare"
    ).strip()
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    assert claims["kubernetes.io"]["node"] == {"name": "spare", "uid": uid}
    assert "pod" not in claims["kubernetes.io"]
    whoami = json.loads(as_token(secure, token, "auth", "whoami", "-o", "json").stdout)
    extra = whoami["status"]["userInfo"]["extra"]
    assert extra["authentication.kubernetes.io/node-name"] == ["spare"]
    assert extra["authentication.kubernetes.io/node-uid"] == [uid]
    secure.ok("delete", "node", "spare")
    gone = eventually(lambda: refused(secure, token, "auth", "whoami"))  # kept 10 s
    assert gone.strip() == "error: You must be logged in to the server (Unauthorized)"


def test_kubectl_create_token_gets_kube_apiservers_refusals(secure: Cluster) -> None:
    short = secure.kubectl("create", "token", "default", "--duration=1m")
    assert short.stderr.strip() == (
        'error: failed to create token: TokenRequest.authentication.k8s.io "" is invalid: '
        "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 "
        "minutes"
    )
    unbound = secure.kubectl(
        "create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "nope"
    )
    assert unbound.stderr.strip() == 'error: failed to create token: pods "nope" not found'
    missing = secure.kubectl("create", "token", "nobody")
    assert missing.stderr.strip() == (
        'error: failed to create token: serviceaccounts "nobody" not found'
    )


def test_struct_values_in_rbac_and_review_errors_read_as_go_prints_them(secure: Cluster) -> None:
    secure.ok("create", "rolebinding", "fixed-ref", "--clusterrole=view", "--user=dora")
    changed = secure.kubectl(
        "patch", "rolebinding", "fixed-ref", "--type=merge", "-p", '{"roleRef":{"name":"edit"}}'
    )
    assert changed.stderr == (
        'The RoleBinding "fixed-ref" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: '
        "cannot change roleRef\n"
    )
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "dora",
            "resourceAttributes": {"verb": "get", "resource": "pods"},
            "nonResourceAttributes": {"verb": "get", "path": "/healthz"},
        },
    }
    both = secure.kubectl("create", "--validate=false", "-f", "-", stdin=json.dumps(review))
    assert both.stderr == (
        'The SubjectAccessReview "" is invalid: spec.nonResourceAttributes: Invalid value: '
        'authorization.NonResourceAttributes{Path:"/healthz", Verb:"get"}: cannot be specified '
        "in combination with resourceAttributes\n"
    )


def test_a_pods_own_token_logs_in_as_its_account_and_dies_with_the_pod(secure: Cluster) -> None:
    # The kubelet's projected token as a container reads it (on pinnace up's own nodes it is
    # granted in process and signed when first read): kube-apiserver takes it for the pod's
    # ServiceAccount, bound to the pod, until the pod is gone.
    node = secure.ok("get", "nodes", "-o", "jsonpath={.items[0].metadata.name}")
    overrides = json.dumps({"spec": {"nodeName": node}})
    secure.ok("run", "holder", "--image=busybox", f"--overrides={overrides}", "--", "sleep", "1d")
    secure.ok("wait", "--for=condition=Ready", "pod/holder", "--timeout=30s")
    path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    token = secure.ok("exec", "holder", "--", "cat", path)
    assert token == secure.ok("exec", "holder", "--", "cat", path)  # the same once signed
    uid = secure.ok("get", "pod", "holder", "-o", "jsonpath={.metadata.uid}")
    whoami = json.loads(as_token(secure, token, "auth", "whoami", "-o", "json").stdout)
    info = whoami["status"]["userInfo"]
    assert info["username"] == "system:serviceaccount:default:default"
    assert info["extra"]["authentication.kubernetes.io/pod-name"] == ["holder"]
    assert info["extra"]["authentication.kubernetes.io/pod-uid"] == [uid]
    secure.ok("delete", "pod", "holder", "--grace-period=0", "--force")
    gone = eventually(lambda: refused(secure, token, "auth", "whoami"))  # kept 10 s
    assert gone.strip() == "error: You must be logged in to the server (Unauthorized)"
