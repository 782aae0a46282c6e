"""Fixtures every test directory shares."""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from tests.apiserver.conftest import Harness

# Speed is the benchmarks' to judge, never a test's: no example fails for taking long (on two
# busy cores a property's example may take over hypothesis's default 200 ms).
settings.register_profile("pinnace", deadline=None)
settings.load_profile("pinnace")

BYTECODE_CACHE = Path(tempfile.gettempdir()) / "pinnace-tests-bytecode"


def pytest_configure(config: pytest.Config) -> None:
    """The `pinnace` processes the tests start (hundreds of them) each import Pinnace afresh;
    an environment that says not to write bytecode (PYTHONDONTWRITEBYTECODE, to keep it out of
    the source tree) would have each compile its ~550 modules again, a second of CPU a start.
    Their bytecode goes to a cache directory of its own instead (PYTHONPYCACHEPREFIX), so the
    source tree stays as it was and each module is compiled once."""
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        os.environ["PYTHONPYCACHEPREFIX"] = str(BYTECODE_CACHE)


LONGEST_FIRST = (
    "tests/gym/test_scheduler_engine.py",
    "tests/http/test_openapi_fuzz.py",
    "tests/http/test_security_e2e.py",
    "tests/dashboard/test_browser.py",
    "tests/http/test_up_etcd.py",
    "tests/metrics/test_prometheus_scrape.py",
    "tests/kubelet/test_logging_pod_kubectl.py",
    "tests/http/test_up.py",
    "tests/gym/test_cli.py",
    "tests/http/test_kubectl.py",
    "tests/http/test_cluster_autoscaler_e2e.py",
    "tests/http/test_agent_history.py",
    "tests/http/test_http.py",
    "tests/sim/test_compare.py",
    "tests/autoscaler/test_cluster_autoscaler.py",
    "tests/http/test_controller_manager_process_metrics.py",
    "tests/controllers/test_deployment_kubectl.py",
    "tests/sim/test_cli.py",
    "tests/http/test_streams_e2e.py",
    "tests/http/test_scheduler_e2e.py",
    "tests/gym/test_env.py",
    "tests/http/test_storage_kubectl.py",
    "tests/http/test_agent_streams.py",
    "tests/http/test_component_processes.py",
    "tests/kubelet/test_up_nodes.py",
    "tests/plan/test_document.py",
    "tests/controllers/test_restart_midflight.py",
    "tests/descheduler/test_cli_evictor.py",
)
"""The test files that take longest, longest first (20 s to 2 minutes of a worker each, in a
run of the whole suite on two cores)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files go first, the rest in their order: the workers take whole files
    (--dist loadfile) in collection order, and one of these taken last would leave the other
    workers idle at the end of the run."""
    rank = {path: place for place, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


@pytest.fixture
def api() -> Iterator[Harness]:
    """An in-process API server on the memory store and a virtual clock."""
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)
