"""ResourceQuota on PersistentVolumeClaims, as the docs' "Limit Storage Consumption" task sets
it: claims counted, storage requested, each also per storage class."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiserver.conftest import Harness

from pinnace.api import catalog
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.quota_usage import usage

QUOTAS = catalog.kind("", "resourcequotas")
CLAIMS = catalog.kind("", "persistentvolumeclaims")
GOLD = "gold.storageclass.storage.k8s.io/"


def claim(name: str, storage: str, storage_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage}},
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name}, "spec": spec}


def test_claims_and_their_storage_are_counted_per_class(api: Harness) -> None:
    hard = {
        "persistentvolumeclaims": "3",
        "requests.storage": "5Gi",
        GOLD + "requests.storage": "2Gi",
        GOLD + "persistentvolumeclaims": "1",
    }
    api.call(
        api.server.create,
        QUOTAS,
        "default",
        {"metadata": {"name": "storage"}, "spec": {"hard": hard}},
    )
    api.call(api.server.create, CLAIMS, "default", claim("plain", "2Gi"))
    api.call(api.server.create, CLAIMS, "default", claim("gold", "1Gi", "gold"))
    used = api.call(api.server.get, QUOTAS, "default", "storage")["status"]["used"]
    assert used == {
        "persistentvolumeclaims": "2",
        "requests.storage": "3Gi",
        GOLD + "persistentvolumeclaims": "1",
        GOLD + "requests.storage": "1Gi",
    }
    with pytest.raises(StatusError) as e:
        api.call(api.server.create, CLAIMS, "default", claim("more-gold", "1Gi", "gold"))
    assert (e.value.code, str(e.value)) == (
        403,
        'persistentvolumeclaims "more-gold" is forbidden: exceeded quota: storage, requested: '
        f"{GOLD}persistentvolumeclaims=1, used: {GOLD}persistentvolumeclaims=1, limited: "
        f"{GOLD}persistentvolumeclaims=1",
    )
    with pytest.raises(StatusError) as e:
        api.call(api.server.create, CLAIMS, "default", claim("big", "3Gi"))
    assert "exceeded quota: storage, requested: requests.storage=3Gi" in str(e.value)
    assert api.call(api.server.get, QUOTAS, "default", "storage")["status"]["used"] == used


def test_the_beta_class_annotation_wins_even_when_empty() -> None:
    """GetPersistentVolumeClaimClass: an empty beta annotation is the claim's class (none)."""
    claim = {
        "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": ""}},
        "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
    }
    counted = usage("persistentvolumeclaims", "", claim)
    assert not [name for name in counted if ".storageclass.storage.k8s.io/" in name]
