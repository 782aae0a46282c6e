"""Updates of an established CustomResourceDefinition take effect at once, as
apiextensions-apiserver v1.32's crdHandler rebuilds a CRD's serving info on every update: the
strategy bumps metadata.generation on a spec change only, versions served and unserved appear
and disappear, the schema and printer columns of later writes are the new ones, and a new
storage version joins status.storedVersions."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from tests.apiextensions.test_crds import CRDS, NAME, crontab, established, following, invalid
from tests.support import SimulatedCluster

from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.tables import to_table
from pinnace.cluster import ClusterOptions

GROUP = "stable.example.com"


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(scheduler=False, controllers=False))
    try:
        established(c)
        yield c
    finally:
        c.close()


def _update(c: SimulatedCluster, change: Callable[[Object], Any]) -> Object:
    crd = copy.deepcopy(c.run(c.client.get(CRDS, "", NAME)))
    change(crd)
    updated = c.run(c.client.update(CRDS, crd))
    c.wait(1)
    return updated


def _add_v1beta1(crd: Object, *, storage: bool = False) -> None:
    versions = crd["spec"]["versions"]
    versions[0]["storage"] = not storage
    versions.append({**copy.deepcopy(versions[0]), "name": "v1beta1", "storage": storage})


def _discovered(c: SimulatedCluster) -> set[str]:
    return {k.version for k in c.server.kinds.discovery_kinds() if k.group == GROUP}


def test_the_generation_follows_spec_changes_only(cluster: SimulatedCluster) -> None:
    labelled = _update(cluster, lambda crd: crd["metadata"].update(labels={"a": "b"}))
    assert labelled["metadata"]["generation"] == 1
    crd = copy.deepcopy(cluster.run(cluster.client.get(CRDS, "", NAME)))
    crd["status"]["conditions"][0]["message"] = "said otherwise"
    assert cluster.run(cluster.client.update_status(CRDS, crd))["metadata"]["generation"] == 1
    cluster.wait(1)
    changed = _update(cluster, _add_v1beta1)
    assert changed["metadata"]["generation"] == 2


def test_a_version_added_is_served_and_one_unserved_is_not(cluster: SimulatedCluster) -> None:
    kind = cluster.server.kinds.by_resource(GROUP, "crontabs")
    assert kind is not None
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    _update(cluster, _add_v1beta1)
    assert cluster.server.kinds.at_version(GROUP, "v1beta1", "crontabs") is not None
    assert _discovered(cluster) == {"v1", "v1beta1"}

    def unserve_v1(crd: Object) -> None:
        crd["spec"]["versions"][0]["served"] = False

    _update(cluster, unserve_v1)
    assert cluster.server.kinds.at_version(GROUP, "v1", "crontabs") is None
    assert _discovered(cluster) == {"v1beta1"}
    found = cluster.server.kinds.at_version(GROUP, "v1beta1", "crontabs")
    assert found is not None and found[1] is not None
    assert cluster.run(cluster.client.get(found[0], "default", "a"))["spec"]["cronSpec"]


def test_a_new_storage_version_is_stored_and_recorded(cluster: SimulatedCluster) -> None:
    before = cluster.run(cluster.client.get(CRDS, "", NAME))
    updated = _update(cluster, lambda crd: _add_v1beta1(crd, storage=True))
    assert updated["status"]["storedVersions"] == ["v1", "v1beta1"]
    # recorded in a new status: the version stored before is as it was
    assert before["status"]["storedVersions"] == ["v1"]
    kind = cluster.server.kinds.by_resource(GROUP, "crontabs")
    assert kind is not None and kind.version == "v1beta1"
    body = {**crontab("b"), "apiVersion": f"{GROUP}/v1beta1"}
    cluster.run(cluster.client.create(kind, "default", body))
    stored = cluster.run(cluster.store.list(f"{GROUP}/crontabs/")).items
    assert [o["apiVersion"] for o in stored] == [f"{GROUP}/v1beta1"]


def test_a_spec_change_ends_the_watches_on_the_resources(cluster: SimulatedCluster) -> None:
    kind = cluster.server.kinds.by_resource(GROUP, "crontabs")
    assert kind is not None
    cluster.run(cluster.client.create(kind, "default", crontab("a")))
    watch = following(cluster, kind)
    _update(cluster, lambda crd: crd["metadata"].update(labels={"a": "b"}))
    assert not watch.done()
    _update(cluster, _add_v1beta1)
    assert watch.done() and watch.result() == ["ADDED"]


def test_a_version_still_stored_cannot_leave_the_spec(cluster: SimulatedCluster) -> None:
    _update(cluster, lambda crd: _add_v1beta1(crd, storage=True))
    crd = copy.deepcopy(cluster.run(cluster.client.get(CRDS, "", NAME)))
    crd["spec"]["versions"] = crd["spec"]["versions"][1:]
    with pytest.raises(StatusError) as e:
        cluster.run(cluster.client.update(CRDS, crd))
    assert e.value.code == 422
    assert (
        'status.storedVersions[0]: Invalid value: "v1": missing from spec.versions; v1 was '
        "previously a storage version, and must remain in spec.versions until a storage "
        "migration ensures no data remains persisted in v1 and removes v1 from "
        "status.storedVersions"
    ) in e.value.message


def test_a_schema_change_applies_to_the_next_write(cluster: SimulatedCluster) -> None:
    def require_image_default_policy(crd: Object) -> None:
        spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        spec["required"] = ["cronSpec", "image"]
        spec["properties"]["policy"]["default"] = "Allow"

    _update(cluster, require_image_default_policy)
    kind = cluster.server.kinds.by_resource(GROUP, "crontabs")
    assert kind is not None
    assert "spec.image: Required value" in invalid(cluster, kind, crontab("a"))
    created = cluster.run(cluster.client.create(kind, "default", crontab("a", image="cron")))
    assert created["spec"]["policy"] == "Allow"


def test_printer_columns_and_subresources_change(cluster: SimulatedCluster) -> None:
    def change(crd: Object) -> None:
        version = crd["spec"]["versions"][0]
        version["additionalPrinterColumns"] = [
            {"name": "Image", "type": "string", "jsonPath": ".spec.image"}
        ]
        version["subresources"] = {
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.n"}
        }

    _update(cluster, change)
    kind = cluster.server.kinds.by_resource(GROUP, "crontabs")
    assert kind is not None and kind.subresources == ("scale",)
    obj = cluster.run(cluster.client.create(kind, "default", crontab(image="cron")))
    table = to_table(kind, [obj], now=cluster.clock.now(), list_meta={})
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Image"]
    assert table["rows"][0]["cells"] == ["a", "cron"]
