"""The streaming subresources through `pinnace up`, as users meet them: real kubectl (which
speaks WebSocket v5.channel.k8s.io, plain SPDY/3.1 when told not to, and tunnels SPDY through
a WebSocket for port-forward)
and the Python client's `stream()` and `portforward()` (v4.channel.k8s.io), on simulated
busybox and nginx containers."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest
from kubernetes import client, config
from kubernetes.stream import portforward, stream
from tests.http.conftest import KUBECTL, Cluster, launch, stop
from tests.support import eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = launch(tmp_path_factory.mktemp("pinnace-streams"), flags=("--nodes", "1"))
    running.ok("run", "box", "--image=busybox", "--env=GREETING=hello", "--", "sleep", "1d")
    running.ok("run", "web", "--image=nginx:1.27")
    running.ok("wait", "--for=condition=Ready", "pod/box", "pod/web", "--timeout=30s")
    yield running
    stop(running)


@pytest.fixture(scope="module")
def core(cluster: Cluster) -> client.CoreV1Api:
    return client.CoreV1Api(config.new_client_from_config(str(cluster.kubeconfig)))


def run_i(
    cluster: Cluster, name: str, *command: str, stdin: str | None = None, rm: bool = True
) -> subprocess.CompletedProcess[str]:
    """`kubectl run -i` of a busybox pod that is not restarted (and deleted after, with `rm`)."""
    flags = ["-i", "--rm"] if rm else ["-i"]
    return cluster.kubectl(
        "run", *flags, "--restart=Never", "--image=busybox", name, "--", *command, stdin=stdin
    )


def test_kubectl_exec_prints_output_and_exits_with_the_commands_status(cluster: Cluster) -> None:
    assert cluster.ok("exec", "box", "--", "printenv", "HOSTNAME") == "box\n"
    failed = cluster.kubectl("exec", "box", "--", "false")
    assert (failed.returncode, failed.stderr) == (1, "command terminated with exit code 1\n")
    script = "echo $GREETING $KUBERNETES_SERVICE_HOST; frobnicate; exit 3"
    done = cluster.kubectl("exec", "box", "--", "sh", "-c", script)
    assert (done.returncode, done.stdout) == (3, "hello 10.96.0.1\n")
    assert done.stderr == "sh: frobnicate: not found\ncommand terminated with exit code 3\n"


def test_kubectl_exec_and_attach_over_spdy_when_told_not_to_use_websockets(
    cluster: Cluster,
) -> None:
    def spdy(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--request-timeout=20s", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"},
        )

    printed = spdy("exec", "box", "--", "printenv", "HOSTNAME")
    assert (printed.returncode, printed.stdout) == (0, "box\n")
    failed = spdy("exec", "box", "--", "false")
    assert (failed.returncode, failed.stderr) == (1, "command terminated with exit code 1\n")
    # stdin's end is its stream's FIN.
    echoed = spdy("exec", "-i", "box", "--", "cat", stdin="hello\n")
    assert (echoed.returncode, echoed.stdout) == (0, "hello\n")
    script = "sleep 1; echo hi; exit 2"
    attached = spdy(
        "run", "-i", "--restart=Never", "--image=busybox", "spdy", "--", "sh", "-c", script
    )
    assert (attached.returncode, attached.stdout) == (2, "hi\n")


def test_kubectl_cp_copies_the_containers_files_out(cluster: Cluster) -> None:
    account = "box:/var/run/secrets/kubernetes.io/serviceaccount"
    cluster.ok("cp", account, str(cluster.workdir / "account"))
    copied = sorted(p.name for p in (cluster.workdir / "account").iterdir())
    assert copied == ["ca.crt", "namespace", "token"]
    assert (cluster.workdir / "account" / "namespace").read_text() == "default"
    # A path that is not there is told (kubectl prints tar's stderr on its stdout).
    missing = cluster.kubectl("cp", "box:/nonexistent", str(cluster.workdir / "nothing"))
    assert "tar: /nonexistent: No such file or directory\n" in missing.stdout
    assert not (cluster.workdir / "nothing").exists()


def test_kubectl_cp_copies_into_the_container_and_back_out(cluster: Cluster) -> None:
    local = cluster.workdir / "upload"
    (local / "sub").mkdir(parents=True)
    (local / "sub" / "notes.txt").write_text("hello\n")
    cluster.ok("cp", str(local), "box:/srv/upload")
    assert cluster.ok("exec", "box", "--", "cat", "/srv/upload/sub/notes.txt") == "hello\n"
    cluster.ok("exec", "box", "--", "sh", "-c", "echo more >> /srv/upload/sub/notes.txt")
    cluster.ok("cp", "box:/srv/upload", str(cluster.workdir / "download"))
    assert (cluster.workdir / "download" / "sub" / "notes.txt").read_text() == "hello\nmore\n"


def test_the_containers_etc_files_are_the_kubelets_and_runtimes(cluster: Cluster) -> None:
    ip = cluster.ok("get", "pod", "box", "-o", "jsonpath={.status.podIP}")
    assert cluster.ok("exec", "box", "--", "cat", "/etc/hostname") == "box\n"
    hosts = cluster.ok("exec", "box", "--", "cat", "/etc/hosts")
    assert hosts.startswith("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n")
    assert hosts.endswith(f"\n{ip}\tbox\n")
    assert cluster.ok("exec", "box", "--", "cat", "/etc/resolv.conf") == (
        "search default.svc.cluster.local svc.cluster.local cluster.local\n"
        "nameserver 10.96.0.10\noptions ndots:5\n"
    )
    cluster.ok("cp", "box:/etc/hostname", str(cluster.workdir / "hostname"))
    assert (cluster.workdir / "hostname").read_text() == "box\n"
    assert cluster.ok("exec", "box", "--", "ls", "/etc") == "hostname\nhosts\nresolv.conf\n"


def test_exec_into_busybox_running_its_own_sh_sees_its_environment_and_files(
    cluster: Cluster,
) -> None:
    """busybox's own command is `sh` with no script and no stdin, which reads nothing of its
    container: kept running by its run time, the container's start makes none of its files,
    and an exec'd command still finds them as the kubelet sets them up."""
    cluster.ok(
        "run",
        "idle",
        "--image=busybox",
        "--restart=Never",
        "--env=GREETING=hello",
        "--annotations=sim.pinnace.dev/run-seconds=86400",
    )
    cluster.ok("wait", "--for=condition=Ready", "pod/idle", "--timeout=30s")
    assert cluster.ok("exec", "idle", "--", "printenv", "GREETING") == "hello\n"
    assert cluster.ok("exec", "idle", "--", "cat", "/etc/hostname") == "idle\n"
    token = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    assert cluster.ok("exec", "idle", "--", "cat", token) == "default"
    cluster.ok("delete", "pod", "idle", "--wait=false")


def test_kubectl_exec_ls_and_pwd_as_busybox(cluster: Cluster) -> None:
    namespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    assert cluster.ok("exec", "box", "--", "ls", "-1", "/etc", namespace) == (
        f"{namespace}\n\n/etc:\nhostname\nhosts\nresolv.conf\n"
    )
    assert cluster.ok("exec", "box", "--", "pwd") == "/\n"
    assert "etc\n" in cluster.ok("exec", "box", "--", "ls")


def test_kubectl_exec_i_feeds_sh_its_commands_on_stdin(cluster: Cluster) -> None:
    done = cluster.kubectl("exec", "-i", "box", "--", "sh", stdin="X=4\necho $X\nexit $X\n")
    assert (done.returncode, done.stdout) == (4, "4\n")
    # cat ends when stdin does: v5's close signal.
    echoed = cluster.kubectl("exec", "-i", "box", "--", "cat", stdin="hello\n")
    assert (echoed.returncode, echoed.stdout) == (0, "hello\n")


def test_kubectl_exec_i_gives_a_script_its_stdin(cluster: Cluster) -> None:
    # The usual way to put a file into a container without tar: stdin into `cat > FILE`.
    written = cluster.kubectl(
        "exec", "-i", "box", "--", "sh", "-c", "cat > /tmp/notes", stdin="one\ntwo\n"
    )
    assert (written.returncode, written.stdout, written.stderr) == (0, "", "")
    assert cluster.ok("exec", "box", "--", "cat", "/tmp/notes") == "one\ntwo\n"
    assert cluster.ok("exec", "-i", "box", "--", "wc", "-l", stdin="a\nb\nc\n") == "3\n"
    script = "head -n 1 | rev; echo end"
    assert cluster.ok("exec", "-i", "box", "--", "sh", "-c", script, stdin="abc\nd\n") == (
        "cba\nend\n"
    )
    # busybox sh's read: a line at a time, split into the names, the last taking the rest
    script = 'read first; read -r a b; echo "$first|$a|$b"; while read l; do echo "+$l"; done'
    lines = "x y\n1 2  3\nl1\nl2\n"
    assert cluster.ok("exec", "-i", "box", "--", "sh", "-c", script, stdin=lines) == (
        "x y|1|2  3\n+l1\n+l2\n"
    )
    # tee: into the file and out again; a read-only mount's file is busybox's error
    teed = cluster.kubectl("exec", "-i", "box", "--", "tee", "/tmp/teed", stdin="t\n")
    assert (teed.returncode, teed.stdout) == (0, "t\n")
    assert cluster.ok("exec", "box", "--", "cat", "/tmp/teed") == "t\n"
    token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    refused = cluster.kubectl("exec", "-i", "box", "--", "tee", "-a", token, stdin="x\n")
    assert (refused.returncode, refused.stdout) == (1, "x\n")
    assert refused.stderr == (
        f"tee: can't open '{token}': Read-only file system\ncommand terminated with exit code 1\n"
    )
    # A command that does not read its input runs without waiting for stdin to end.
    with subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "exec", "-i", "box", "--", "echo", "hi"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as open_stdin:
        assert open_stdin.stdout is not None
        assert open_stdin.stdout.read() == "hi\n"
        assert open_stdin.wait(timeout=30) == 0


def test_kubectl_exec_errors_are_kube_apiservers(cluster: Cluster) -> None:
    missing = cluster.kubectl("exec", "nope", "--", "true")
    assert missing.stderr == 'Error from server (NotFound): pods "nope" not found\n'
    wrong = cluster.kubectl("exec", "box", "-c", "db", "--", "true")
    assert wrong.stderr == "Error from server (BadRequest): container db is not valid for pod box\n"
    cluster.ok("run", "done", "--image=busybox", "--restart=Never", "--", "true")
    eventually(
        lambda: cluster.ok("get", "pod", "done", "-o=jsonpath={.status.phase}") == "Succeeded"
    )
    finished = cluster.kubectl("exec", "done", "--", "true")
    assert finished.stderr == (
        "error: cannot exec into a container in a completed pod; current phase is Succeeded\n"
    )


INIT_FAILS = """
apiVersion: v1
kind: Pod
metadata: {name: init-fails}
spec:
  initContainers:
  - {name: init, image: busybox, command: [sh, -c, "echo trying; exit 1"]}
  containers:
  - {name: app, image: busybox, command: [sleep, 1d]}
"""


def test_kubectl_logs_of_a_container_not_started_says_why_as_the_kubelet_does(
    cluster: Cluster,
) -> None:
    cluster.ok("apply", "-f", "-", stdin=INIT_FAILS)
    eventually(lambda: cluster.ok("logs", "init-fails", "-c", "init") == "trying\n")
    # The app waits for its init container: the kubelet gives the waiting reason.
    waiting = cluster.kubectl("logs", "init-fails", "-c", "app")
    assert waiting.stderr == (
        'Error from server (BadRequest): container "app" in pod "init-fails" '
        "is waiting to start: PodInitializing\n"
    )
    cluster.ok("delete", "pod", "init-fails", "--wait=false")


def test_a_program_the_image_lacks_fails_to_start_as_containerds_exec_does(
    cluster: Cluster, core: client.CoreV1Api
) -> None:
    cluster.ok("run", "bare", "--image=registry.k8s.io/pause:3.10")
    cluster.ok("wait", "--for=condition=Ready", "pod/bare", "--timeout=30s")

    def cri_error(program: str, why: str) -> str:
        return (
            'failed to exec in container: failed to start exec "[0-9a-f]{64}": OCI runtime exec '
            "failed: exec failed: unable to start container process: "
            + re.escape(f'exec: "{program}": {why}: unknown')
        )

    kubelet = "Internal error occurred: error executing command in container: "
    translated = "error: Internal error occurred: " + kubelet  # v5: the translator wraps it again
    not_in_path = "executable file not found in $PATH"
    for args, program, why in (
        (("exec", "bare", "--", "sh"), "sh", not_in_path),
        (
            ("exec", "bare", "--", "/bin/sh", "-c", "true"),
            "/bin/sh",
            "stat /bin/sh: no such file or directory",
        ),
        (("cp", "/etc/hostname", "bare:/tmp/hostname"), "tar", not_in_path),
    ):
        done = cluster.kubectl(*args)
        assert done.returncode == 1, done
        # kubectl cp's stdin writer may also log the close it met ("websocket: close sent")
        last = done.stderr.splitlines()[-1]
        assert re.fullmatch(re.escape(translated) + cri_error(program, why), last), done
    spdy = subprocess.run(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "exec", "bare", "--", "ls"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false"},
    )
    expected = "error: " + re.escape(kubelet) + cri_error("ls", not_in_path) + "\n"
    assert spdy.returncode == 1 and re.fullmatch(expected, spdy.stderr), spdy
    ls = stream(
        core.connect_get_namespaced_pod_exec,
        "bare",
        "default",
        command=["ls"],
        stdout=True,
        stderr=True,
        _preload_content=False,
    )
    ls.run_forever(timeout=10)
    status = json.loads(ls.read_channel(3))
    assert (status["reason"], status["code"]) == ("InternalError", 500)
    assert re.fullmatch(re.escape(kubelet) + cri_error("ls", not_in_path), status["message"])
    # distroless's debug tags carry busybox
    cluster.ok("run", "debug", "--image=gcr.io/distroless/base:debug", "--", "sleep", "1d")
    cluster.ok("wait", "--for=condition=Ready", "pod/debug", "--timeout=30s")
    assert cluster.ok("exec", "debug", "--", "echo", "hi") == "hi\n"


def test_the_python_clients_stream_runs_commands_and_reads_their_exit_code(
    core: client.CoreV1Api,
) -> None:
    exec_ = core.connect_get_namespaced_pod_exec
    out = stream(exec_, "box", "default", command=["echo", "hi"], stderr=True, stdout=True)
    assert out == "hi\n"
    shell = stream(
        exec_,
        "box",
        "default",
        command=["sh"],
        stdin=True,
        stdout=True,
        stderr=True,
        tty=False,
        _preload_content=False,
    )
    shell.write_stdin("echo $HOSTNAME\necho oops >&2\nexit 7\n")
    shell.run_forever(timeout=10)
    assert (shell.read_stdout(), shell.read_stderr(), shell.returncode) == ("box\n", "oops\n", 7)
    zipped = stream(
        exec_, "box", "default", command=["sh", "-c", "echo -n hi | gzip"], stdout=True, binary=True
    )
    assert gzip.decompress(zipped) == b"hi"


def test_kubectl_run_i_attaches_prints_what_follows_and_deletes_the_pod(cluster: Cluster) -> None:
    script = "sleep 1; echo hi; exit 2"
    done = run_i(cluster, "once", "sh", "-c", script)
    assert (done.returncode, done.stdout) == (2, 'hi\npod "once" deleted\n')
    assert cluster.kubectl("get", "pod", "once").returncode == 1


def test_kubectl_run_i_gives_the_containers_command_its_stdin(cluster: Cluster) -> None:
    # stdin: true, stdinOnce: true: the command waits on its input, reads what kubectl sends
    # to its end, and ends with its own status
    script = "echo ready; read first; echo got $first; wc -l; exit 3"
    done = run_i(cluster, "reader", "sh", "-c", script, stdin="hello\na\nb\n")
    assert (done.returncode, done.stdout) == (3, 'got hello\n2\npod "reader" deleted\n')
    piped = run_i(cluster, "catted", "cat", stdin="one\ntwo\n")
    assert (piped.returncode, piped.stdout) == (0, 'one\ntwo\npod "catted" deleted\n')
    # what it printed is its log, before and after it waited
    run_i(cluster, "kept", "sh", "-c", script, stdin="hello\na\nb\n", rm=False)
    assert cluster.ok("logs", "kept") == "ready\ngot hello\n2\n"
    assert cluster.ok("get", "pod", "kept", "-o=jsonpath={.status.phase}") == "Failed"
    cluster.ok("delete", "pod", "kept", "--wait=false")
    # a line it prints after a pause, before it reads, is printed once (kubectl attaches
    # before the pause ends)
    script = "echo first; sleep 3; echo later; read x; echo got $x"
    run_i(cluster, "paused", "sh", "-c", script, stdin="hi\n", rm=False)
    assert cluster.ok("logs", "paused") == "first\nlater\ngot hi\n"
    cluster.ok("delete", "pod", "paused", "--wait=false")


def test_kubectl_run_i_with_a_shell_ends_the_container_as_the_shell_ends(cluster: Cluster) -> None:
    # the shell's exit is the container's: the pod fails with its status, which kubectl returns
    done = run_i(cluster, "shell", "sh", stdin="echo hi\nexit 4\n")
    assert (done.returncode, done.stdout) == (4, 'hi\npod "shell" deleted\n')
    # stdinOnce: the end of kubectl's stdin is the end of the shell's
    ended = run_i(cluster, "eof", "sh", stdin="echo bye\n")
    assert (ended.returncode, ended.stdout) == (0, 'bye\npod "eof" deleted\n')
    # what the shell printed, on stdout and stderr, is the container's log
    run_i(cluster, "logged", "sh", stdin="echo one\necho two >&2\n", rm=False)
    assert cluster.ok("logs", "logged") == "one\ntwo\n"
    cluster.ok("delete", "pod", "logged", "--wait=false")


def test_attach_streams_the_containers_lines_as_they_come(
    cluster: Cluster, core: client.CoreV1Api
) -> None:
    ticking = "while true; do echo tick; sleep 1; done"
    cluster.ok("run", "ticker", "--image=busybox", "--", "sh", "-c", ticking)
    cluster.ok("wait", "--for=condition=Ready", "pod/ticker", "--timeout=30s")
    attached = stream(
        core.connect_get_namespaced_pod_attach,
        "ticker",
        "default",
        stdout=True,
        stderr=True,
        _preload_content=False,
    )
    seen = ""
    while seen.count("tick\n") < 2:
        attached.update(timeout=5)
        seen += attached.read_stdout()
    attached.close()
    assert set(seen.splitlines()) == {"tick"}


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: plain SPDY
def test_kubectl_port_forward_reaches_nginxs_welcome_page(
    cluster: Cluster, websockets: str
) -> None:
    forwarding = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "port-forward", "pod/web", "0:80"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KUBECTL_PORT_FORWARD_WEBSOCKETS": websockets},
    )
    try:
        assert forwarding.stdout is not None
        first = forwarding.stdout.readline()
        port = re.search(r"127\.0\.0\.1:(\d+) -> 80", first)
        assert port, first
        with urllib.request.urlopen(f"http://127.0.0.1:{port.group(1)}/", timeout=10) as page:
            assert page.status == 200
            assert "<h1>Welcome to nginx!</h1>" in page.read().decode()
    finally:
        forwarding.terminate()
        forwarding.communicate(timeout=10)


def test_the_python_clients_portforward_answers_http_and_reports_a_closed_port(
    core: client.CoreV1Api,
) -> None:
    pods = core.connect_get_namespaced_pod_portforward
    web = portforward(pods, "web", "default", ports="80").socket(80)
    web.setblocking(True)
    web.sendall(b"GET / HTTP/1.1\r\nHost: web\r\n\r\n")
    answer = b"".join(iter(lambda: web.recv(4096), b""))
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"<h1>Welcome to nginx!</h1>" in answer
    # box runs busybox, which listens nowhere: the connection is refused, as containerd says.
    refused = portforward(pods, "box", "default", ports="80")
    connection = refused.socket(80)
    connection.setblocking(True)
    assert connection.recv(1) == b""
    error = refused.error(80)
    assert error.startswith("error forwarding port 80 to pod ")
    assert error.endswith("connect: connection refused ")


LIVENESS_EXEC = """\
apiVersion: v1
kind: Pod
metadata:
  labels:
    test: liveness
  name: liveness-exec
spec:
  containers:
  - name: liveness
    image: registry.k8s.io/busybox
    args:
    - /bin/sh
    - -c
    - touch /tmp/healthy; sleep 30; rm -f /tmp/healthy; sleep 600
    livenessProbe:
      exec:
        command:
        - cat
        - /tmp/healthy
      initialDelaySeconds: 5
      periodSeconds: 5
"""


def test_the_documentations_liveness_container_runs_its_script(cluster: Cluster) -> None:
    """The Kubernetes documentation's exec liveness example: the shell model runs its
    `touch` (and later its `rm`), so the file is there to see, and the node agent has nothing
    to say it does not model."""
    cluster.ok("apply", "-f", "-", stdin=LIVENESS_EXEC)
    cluster.ok("wait", "--for=condition=Ready", "pod/liveness-exec", "--timeout=30s")
    assert cluster.ok("exec", "liveness-exec", "--", "ls", "/tmp") == "healthy\n"
    assert cluster.ok("exec", "liveness-exec", "--", "cat", "/tmp/healthy") == ""
    reasons = cluster.ok(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=liveness-exec",
        "-o",
        "jsonpath={.items[*].reason}",
    )
    assert "Started" in reasons and "CommandNotModelled" not in reasons, reasons
