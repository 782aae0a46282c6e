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


@pytest.fixture
def api() -> Iterator[Harness]:
    """An in-process API server on the memory store and a virtual clock."""
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)
