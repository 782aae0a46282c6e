"""kube-apiserver's `apiserver_storage_objects{resource}`: how many objects of each resource
are stored (k8s.io/apiserver/pkg/storage/etcd3/metrics, v1.32), counted when read. The resource
label is kube's group-resource string: `pods`, `deployments.apps`. A kind only ever created
(Binding, TokenReview, the access reviews) has no storage, so no series, as kube-apiserver,
which counts what each registry store holds, has none for it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from pinnace.api import catalog
from pinnace.api.discovery import is_stored
from pinnace.api.kind import Kind
from pinnace.apiserver.keys import kind_prefix
from pinnace.store import Store


class StorageObjects(Collector):
    def __init__(self, store: Store, kinds: Callable[[], Iterable[Kind]] = catalog.kinds) -> None:
        """`kinds`: every kind stored now (the established CRDs' among them)."""
        self.store = store
        self.kinds = kinds

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "apiserver_storage_objects",
            "[STABLE] Number of stored objects at the time of last check split by kind. In case of "
            "a fetching error, the value will be -1.",
            labels=["resource"],
        )
        for kind in self.kinds():
            if not is_stored(kind):
                continue
            resource = f"{kind.plural}.{kind.group}" if kind.group else kind.plural
            family.add_metric([resource], self.store.count(kind_prefix(kind)))
        yield family
