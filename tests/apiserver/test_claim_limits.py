"""LimitRanger on PersistentVolumeClaims' updates, as v1.32: an update is checked against the
namespace's LimitRanges as a create is (a claim made before the LimitRange included), except
the update of a claim being deleted."""

from __future__ import annotations

import pytest
from tests.apiserver.conftest import Harness
from tests.apiserver.test_claim_quota import claim

from pinnace.api import catalog
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError

CLAIMS = catalog.kind("", "persistentvolumeclaims")
LIMIT_RANGES = catalog.kind("", "limitranges")
LABEL = {"metadata": {"labels": {"team": "data"}}}


def test_an_update_is_held_to_a_limit_range_made_after_the_claim(api: Harness) -> None:
    api.call(api.server.create, CLAIMS, "default", claim("big", "5Gi"))
    limits = {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}}
    api.call(
        api.server.create,
        LIMIT_RANGES,
        "default",
        {"metadata": {"name": "storage"}, "spec": {"limits": [limits]}},
    )
    with pytest.raises(StatusError) as e:
        api.call(api.server.patch, CLAIMS, "default", "big", PatchType.MERGE, LABEL)
    assert (e.value.code, str(e.value)) == (
        403,
        'persistentvolumeclaims "big" is forbidden: maximum storage usage per '
        "PersistentVolumeClaim is 2Gi, but request is 5Gi",
    )

    # Its protection finalizer keeps it while it is deleted: then its updates pass.
    api.call(api.server.delete, CLAIMS, "default", "big")
    api.call(api.server.patch, CLAIMS, "default", "big", PatchType.MERGE, LABEL)
    stored = api.call(api.server.get, CLAIMS, "default", "big")
    assert stored["metadata"]["labels"] == {"team": "data"}
    assert stored["metadata"]["deletionTimestamp"]
