"""The resource quota controller's full resync on the virtual clock: a pod being deleted that
stays stored past its grace stops counting at the next resync, as in v1.32."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.options import DeleteOptions
from pinnace.api.status import StatusError
from pinnace.apiserver.quota_resync import DEFAULT_SYNC_PERIOD, QuotaResync

PODS = catalog.kind("", "pods")
QUOTAS = catalog.kind("", "resourcequotas")


def pod(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "finalizers": ["example.com/keep"]},
        "spec": {"nodeName": "lost-node", "containers": [{"name": "app", "image": "nginx"}]},
    }


def used(api: Harness) -> dict[str, str]:
    return dict(api.call(api.server.get, QUOTAS, "default", "pods")["status"]["used"])


def test_a_pod_stuck_terminating_stops_counting_at_the_resync_after_its_grace(
    api: Harness,
) -> None:
    clock = api.server.clock
    resync = QuotaResync(api.server.store, clock, api.server.admission.resync)
    api.run(resync.start())
    started = clock.now()
    api.call(
        api.server.create,
        QUOTAS,
        "default",
        {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": "1"}}},
    )
    api.call(api.server.create, PODS, "default", pod("stuck"))
    # Its node is lost: the pod stays Terminating, counted until 30 s + 30 s after this.
    api.call(api.server.delete, PODS, "default", "stuck", DeleteOptions(grace_period_seconds=30))
    api.run(clock.sleep(120))
    assert used(api) == {"pods": "1"}
    with pytest.raises(StatusError) as e:
        api.call(api.server.create, PODS, "default", pod("next"))
    assert "exceeded quota: pods" in str(e.value)

    api.run(clock.sleep_until(started + DEFAULT_SYNC_PERIOD - 1))
    assert used(api) == {"pods": "1"}
    api.run(clock.sleep_until(started + DEFAULT_SYNC_PERIOD + 1))
    assert used(api) == {"pods": "0"}
    api.call(api.server.create, PODS, "default", pod("next"))

    api.run(clock.sleep(30 * 24 * 3600))  # a month with no deletion: no pass to run
    passes = resync.passes
    api.run(clock.sleep(30 * 24 * 3600))
    assert resync.passes == passes
    api.run(resync.stop())
