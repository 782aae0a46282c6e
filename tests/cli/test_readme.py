"""The README's Quickstart and CI run the same test command, and its Quickstart and tour run
against `pinnace up` as they read."""

import doctest
import os
import re
import subprocess
from pathlib import Path

from tests.http.conftest import launch, stop
from tests.support import eventually

ROOT = Path(__file__).resolve().parents[2]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quickstart)


def test_quickstart_has_the_run_and_test_commands() -> None:
    run, test = quickstart_commands()
    assert "pip install ." in run and "pinnace" in run
    assert ".[test]" in test and "pytest" in test


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, test = quickstart_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci_lines


def test_readme_python_examples_run_as_shown() -> None:
    readme = (ROOT / "README.md").read_text()
    examples = "\n".join(re.findall(r"```pycon\n(.+?)```", readme, flags=re.S))
    parser = doctest.DocTestParser()
    test = parser.get_doctest(examples, {}, "README.md", str(ROOT / "README.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert test.examples and runner.failures == 0


def quickstart_session() -> list[str]:
    """The commands of the Quickstart's terminal session, without the `export KUBECONFIG`
    line (the test gives the kubeconfig)."""
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    [session] = re.findall(r"```console\n(.+?)```", quickstart, flags=re.S)
    commands = [line[2:] for line in session.splitlines() if line.startswith("$ ")]
    return [c for c in commands if not c.startswith("export KUBECONFIG=")]


def tour_workload_commands() -> list[str]:
    """The tour's Workloads commands on the Quickstart's deployment (the DaemonSet is
    docs/controllers.md's, which the README does not create)."""
    readme = (ROOT / "README.md").read_text()
    workloads = readme.split("**Workloads.**", 1)[1]
    [block] = re.findall(r"```sh\n(.+?)```", workloads, flags=re.S)[:1]
    return [line for line in block.splitlines() if "ds/node-agent" not in line]


def test_the_quickstart_and_the_tour_show_usage_and_autoscaling(tmp_path: Path) -> None:
    # `pinnace up --nodes 3`, with the HPA evaluated every 2 s rather than 15 s.
    flags = ("--nodes", "3", "--horizontal-pod-autoscaler-sync-period", "2s")
    cluster = launch(tmp_path, flags=flags)

    def shell(command: str) -> str:
        done = subprocess.run(
            ["bash", "-c", command],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
        )
        assert done.returncode == 0, f"{command}\n{done.stderr}"
        return done.stdout

    try:
        for command in quickstart_session():
            shell(command)
        *commands, watch = tour_workload_commands()
        for command in commands:
            shell(command)
        # The pods' usage shows, and once they have counted for a metrics window the HPA
        # shows a utilization: neither stays at 0m and <unknown>.
        assert watch.startswith("kubectl top pods; kubectl get hpa")
        def counted() -> bool:
            output = shell(watch)
            usage = [line.split()[1] for line in output.splitlines() if line.startswith("web-")]
            hpa = next(line.split() for line in output.splitlines() if line.startswith("web "))
            assert usage and "0m" not in usage, output
            assert re.fullmatch(r"\d+%/50%", hpa[hpa.index("cpu:") + 1]), output
            return True

        eventually(counted, timeout=90, interval=1)
    finally:
        stop(cluster)
