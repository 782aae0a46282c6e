"""The ServiceAccount admission plugin's decisions (plugin/pkg/admission/serviceaccount,
v1.32): mirror pods, the account's pull secrets, an existing token volume."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.admission import service_account

ACCOUNT = {"metadata": {"name": "default", "namespace": "ns"}}
MIRROR = {"kubernetes.io/config.mirror": "abc"}


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec},
    }


def test_a_mirror_pod_is_left_alone_unless_it_names_an_account_or_a_secret() -> None:
    mirror = pod()
    mirror["metadata"]["annotations"] = MIRROR
    assert service_account.requested_account(mirror) == ""
    service_account.admit_pod(mirror, None, "abcde")
    assert "serviceAccountName" not in mirror["spec"] and "volumes" not in mirror["spec"]
    for spec, why in (
        ({"serviceAccountName": "x"}, "a mirror pod may not reference service accounts"),
        (
            {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]},
            "a mirror pod may not reference secrets",
        ),
    ):
        bad = pod(**spec)
        bad["metadata"]["annotations"] = MIRROR
        with pytest.raises(StatusError) as e:
            service_account.admit_pod(bad, None, "abcde")
        assert e.value.code == 403 and e.value.message == f'pods "p" is forbidden: {why}'


def test_the_accounts_pull_secrets_go_to_a_pod_without_any() -> None:
    account = {**ACCOUNT, "imagePullSecrets": [{"name": "registry"}]}
    given = pod()
    service_account.admit_pod(given, account, "abcde")
    assert given["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    own = pod(imagePullSecrets=[{"name": "mine"}])
    service_account.admit_pod(own, account, "abcde")
    assert own["spec"]["imagePullSecrets"] == [{"name": "mine"}]


def test_an_existing_kube_api_access_volume_is_mounted_not_added_again() -> None:
    existing = service_account.token_volume("kube-api-access-zzzzz")
    given = pod(volumes=[existing])
    service_account.admit_pod(given, ACCOUNT, "abcde")
    assert [v["name"] for v in given["spec"]["volumes"]] == ["kube-api-access-zzzzz"]
    assert given["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-zzzzz"
