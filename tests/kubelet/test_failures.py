"""How a node agent's loops log a failed pass (`pinnace.kubelet.failures`)."""

from __future__ import annotations

import logging

import pytest

from pinnace.client.transport import HTTPError
from pinnace.kubelet.failures import LoopFailures


def test_an_api_server_out_of_reach_is_one_warning_per_node_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # While the API server restarts, every node's lease renewal fails alike: one line each,
    # as for a refusal of the API's, not a traceback per node.
    failures = LoopFailures("east-1")
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            with failures.guard("lease renewal"):
                raise HTTPError("cannot connect to https://127.0.0.1:6443: [Errno 111] refused")
        with failures.guard("lease renewal"):
            pass
    assert [(r.levelname, r.getMessage(), r.exc_info) for r in caplog.records] == [
        (
            "WARNING",
            "node east-1: lease renewal failed: cannot connect to https://127.0.0.1:6443: "
            "[Errno 111] refused",
            None,
        ),
    ]
