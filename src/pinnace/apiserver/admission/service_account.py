"""ServiceAccount, as kube-apiserver v1.32's admission plugin of that name
(plugin/pkg/admission/serviceaccount/admission.go).

On pod create only (mirror pods aside): a pod without `spec.serviceAccountName` gets
`default`; the ServiceAccount it names must exist (else 403 `error looking up service account
ns/name: serviceaccount "name" not found`); unless the pod's (or else the account's)
`automountServiceAccountToken` is false, the pod gets the projected volume
`kube-api-access-xxxxx` (a bound token, the namespace's kube-root-ca.crt and the namespace) and
every container and init container without a mount at /var/run/secrets/kubernetes.io/
serviceaccount mounts it there, read-only; a pod without imagePullSecrets takes the account's.

A mirror pod is left as it is, and refused if it names a service account, references a Secret
or projects a token. The `kubernetes.io/enforce-mountable-secrets` annotation of a
ServiceAccount is not enforced (docs/differences.md).

The request pipeline looks the account up (retrying a missing `default` as v1.32 does, since
the ServiceAccount controller creates it just after its namespace) and passes it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_validation import MIRROR_POD_ANNOTATION
from pinnace.api.core.serviceaccount import DEFAULT_SERVICE_ACCOUNT
from pinnace.apiserver.admission.errors import forbidden
from pinnace.apiserver.auth.node import pod_references

VOLUME_PREFIX = "kube-api-access-"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIG_MAP = "kube-root-ca.crt"
TOKEN_EXPIRATION_SECONDS = 3607
"""serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 s, which tells the API
server to issue a longer-lived token and warn when an old one is used."""
PROJECTED_DEFAULT_MODE = 0o644
LOOKUP_ATTEMPTS_FOR_DEFAULT = 10


def is_mirror_pod(pod: Mapping[str, Any]) -> bool:
    annotations = as_dict(as_dict(pod.get("metadata")).get("annotations"))
    return MIRROR_POD_ANNOTATION in annotations


def requested_account(pod: dict[str, Any]) -> str:
    """The account the pod runs as, `default` set where it names none (mirror pods aside)."""
    spec = child_dict(pod, "spec")
    if spec is None or is_mirror_pod(pod):
        return ""
    if not spec.get("serviceAccountName"):
        # and v1's deprecated field, which shows the same (pod_defaults)
        spec["serviceAccountName"] = spec["serviceAccount"] = DEFAULT_SERVICE_ACCOUNT
    name = spec["serviceAccountName"]
    return name if isinstance(name, str) else ""


def admit_pod(pod: dict[str, Any], account: Mapping[str, Any] | None, volume_suffix: str) -> None:
    """Check the pod's account exists, then mount its token and take its pull secrets, in
    place. `volume_suffix` names a new kube-api-access volume."""
    if is_mirror_pod(pod):
        validate_mirror_pod(pod)
        return
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    account = found(pod, account)
    if _automount(spec, account):
        _mount_token(spec, VOLUME_PREFIX + volume_suffix)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [
            {"name": ref.get("name", "")} for ref in account["imagePullSecrets"]
        ]


def found(pod: Mapping[str, Any], account: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The pod's account; refused when there is none."""
    if account is not None:
        return account
    meta, spec = as_dict(pod.get("metadata")), as_dict(pod.get("spec"))
    namespace, name = meta.get("namespace", ""), spec.get("serviceAccountName", "")
    raise forbidden(
        "pods",
        pod,
        f'error looking up service account {namespace}/{name}: serviceaccount "{name}" not found',
    )


def _automount(spec: Mapping[str, Any], account: Mapping[str, Any]) -> bool:
    """The pod's preference, else the account's, else true."""
    for source in (spec, account):
        if isinstance(source.get("automountServiceAccountToken"), bool):
            return bool(source["automountServiceAccountToken"])
    return True


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume of a bound token, the cluster's CA and the namespace."""
    return {"name": name, "projected": _TOKEN_PROJECTION}


_TOKEN_PROJECTION: dict[str, Any] = {
    "defaultMode": PROJECTED_DEFAULT_MODE,
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {
            "downwardAPI": {
                "items": [
                    {
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }
                ]
            }
        },
    ],
}
"""What every token volume projects, one object shared by the pods that get it (as the
default tolerations are): stored objects are read-only (pinnace.store.interface), and the
projection is complete as it is, so the defaulting a later update of the pod runs finds
nothing to add to it. Admission builds one dict a pod instead of thirteen (2 KB)."""


def _mount_token(spec: dict[str, Any], new_name: str) -> None:
    volumes = spec.get("volumes")
    volumes = volumes if isinstance(volumes, list) else []
    existing = next(
        (
            v["name"]
            for v in volumes
            if isinstance(v, dict)
            and isinstance(v.get("name"), str)
            and v["name"].startswith(VOLUME_PREFIX)
        ),
        None,
    )
    name = existing or new_name
    needed = False
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts")
            mounts = mounts if isinstance(mounts, list) else []
            if any(as_dict(m).get("mountPath") == MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [
                *mounts,
                {"name": name, "readOnly": True, "mountPath": MOUNT_PATH},
            ]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*volumes, token_volume(name)]


def validate_mirror_pod(pod: Mapping[str, Any]) -> None:
    spec = as_dict(pod.get("spec"))
    if spec.get("serviceAccountName"):
        raise forbidden("pods", pod, "a mirror pod may not reference service accounts")
    if _references_secrets(pod):
        raise forbidden("pods", pod, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or ():
        for source in as_dict(as_dict(volume).get("projected")).get("sources") or ():
            if as_dict(source).get("serviceAccountToken") is not None:
                raise forbidden(
                    "pods", pod, "a mirror pod may not use ServiceAccountToken volume projections"
                )


def _references_secrets(pod: Mapping[str, Any]) -> bool:
    """Whether the pod names a Secret anywhere (podutil.VisitPodSecretNames)."""
    return any(resource == "secrets" for resource, _ in pod_references(pod))
