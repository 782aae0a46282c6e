"""The root CA certificate publisher: a `kube-root-ca.crt` ConfigMap in every namespace,
holding the cluster's CA certificate under `ca.crt`, put back as it was if it is changed or
deleted (pkg/controller/certificates/rootcacertpublisher/publisher.go, v1.32). Pods read it
through the kube-api-access volume the ServiceAccount admission plugin gives them.

A cluster's CA is the PEM it is given (`pinnace up --tls`: the CA that signs its serving
certificate; plain `pinnace up`: one it keeps in its data directory), else a self-signed
Ed25519 certificate made from the cluster's seed (`self_signed_ca`), the same for the same
seed (docs/differences.md).
"""

from __future__ import annotations

import datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding

from pinnace.api import catalog
from pinnace.api.objects import Object, clone
from pinnace.apiserver.auth.certs import ca_certificate
from pinnace.client import Client
from pinnace.clock import Randomness
from pinnace.controllers.namespace_objects import NamespaceObjectController

CONFIG_MAPS = catalog.kind("", "configmaps")
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
CA_VALIDITY = datetime.timedelta(days=3650)
"""kubeadm's CA lasts ten years."""


def self_signed_ca(randomness: Randomness, not_before: float) -> str:
    """A CA certificate (PEM) named `kubernetes`, as kubeadm names its own, valid ten years
    from `not_before` (seconds since the epoch); its key and serial come from `randomness`."""
    rand = randomness.child("root-ca").random
    key = Ed25519PrivateKey.from_private_bytes(rand.randbytes(32))
    start = datetime.datetime.fromtimestamp(int(not_before), datetime.UTC)
    certificate = ca_certificate(
        key.public_key(), rand.getrandbits(63) + 1, start, start + CA_VALIDITY
    ).sign(key, None)
    return certificate.public_bytes(Encoding.PEM).decode()


class RootCACertPublisher(NamespaceObjectController):
    def __init__(self, client: Client, root_ca: str) -> None:
        super().__init__(client, CONFIG_MAPS)
        self._root_ca = root_ca
        self._objects.add_event_handler(
            on_update=lambda old, new: self._config_map_changed(new),
            on_delete=self._config_map_changed,
        )

    def _config_map_changed(self, cm: Object) -> None:
        if cm["metadata"]["name"] == ROOT_CA_CONFIG_MAP:
            self._queue.add(cm["metadata"]["namespace"])

    async def sync(self, namespace: str) -> None:
        data = {"ca.crt": self._root_ca}
        cm = self._objects.get(namespace, ROOT_CA_CONFIG_MAP)
        if cm is None:
            await self._create(
                namespace,
                {
                    "metadata": {
                        "name": ROOT_CA_CONFIG_MAP,
                        "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
                    },
                    "data": data,
                },
            )
            return
        annotations = cm["metadata"].get("annotations") or {}
        if cm.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return
        updated = clone(cm)
        updated["data"] = data
        updated["metadata"]["annotations"] = {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}
        await self._client.update(CONFIG_MAPS, updated)
