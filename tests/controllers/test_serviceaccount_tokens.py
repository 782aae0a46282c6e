"""Legacy service account tokens as kube-controller-manager's tokens controller and
kube-apiserver v1.32 keep them: a Secret of type kubernetes.io/service-account-token filled
with a token, the CA and the namespace; the token good while the Secret holds it and the
account is there, its use dated on the Secret; Secrets of missing accounts deleted. On the
virtual clock."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.objects import clone
from pinnace.api.status import StatusError
from pinnace.apiserver.auth.tokens import TokenError
from pinnace.cluster import ClusterOptions

SECRETS = catalog.kind("", "secrets")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(ClusterOptions(seed=3, root_ca=CA))
    yield c
    c.close()


def token_secret(name: str, account: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "annotations": {"kubernetes.io/service-account.name": account}},
        "type": "kubernetes.io/service-account-token",
    }


def get_secret(cluster: SimulatedCluster, name: str) -> dict[str, Any]:
    return cluster.run(cluster.client.get(SECRETS, "default", name))  # type: ignore[no-any-return]


def refusal(cluster: SimulatedCluster, token: str) -> str:
    with pytest.raises(TokenError) as e:
        cluster.run(cluster.server.authenticate_service_account(token))
    return str(e.value)


def test_a_token_secret_is_filled_and_its_token_lasts_as_long_as_it(
    cluster: SimulatedCluster,
) -> None:
    account = cluster.run(
        cluster.client.create(SERVICE_ACCOUNTS, "default", {"metadata": {"name": "robot"}})
    )
    cluster.run(cluster.client.create(SECRETS, "default", token_secret("robot-token", "robot")))
    cluster.wait(1)
    secret = get_secret(cluster, "robot-token")
    data = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
    assert data["ca.crt"] == CA and data["namespace"] == "default"
    assert (
        secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"]
        == (account["metadata"]["uid"])
    )
    found = cluster.run(cluster.server.authenticate_service_account(data["token"]))
    assert found is not None
    user = found[0]
    assert (user.name, user.uid) == (
        "system:serviceaccount:default:robot",
        account["metadata"]["uid"],
    )
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:default")
    today = cluster.clock.now_rfc3339()[:10]
    labels = get_secret(cluster, "robot-token")["metadata"]["labels"]
    assert labels == {"kubernetes.io/legacy-token-last-used": today}

    changed = clone(get_secret(cluster, "robot-token"))
    changed["data"]["token"] = base64.b64encode(b"something-else").decode()
    cluster.run(cluster.client.update(SECRETS, changed))
    assert refusal(cluster, data["token"]) == "token does not match server's copy"
    cluster.run(cluster.client.delete(SERVICE_ACCOUNTS, "default", "robot"))
    cluster.wait(1)
    with pytest.raises(StatusError):
        get_secret(cluster, "robot-token")  # deleted with its account
    assert refusal(cluster, data["token"]) == "token has been invalidated"


def test_a_token_secret_for_no_account_is_deleted(cluster: SimulatedCluster) -> None:
    cluster.run(cluster.client.create(SECRETS, "default", token_secret("orphan", "nobody")))
    cluster.wait(1)
    with pytest.raises(StatusError) as e:
        get_secret(cluster, "orphan")
    assert e.value.code == 404
