"""Pod and pod template defaulting, as kube-apiserver v1.32 applies it on decode.

Two levels, as in Kubernetes:
- `default_pod_spec` fills what every PodSpec gets, including the templates inside
  Deployments, Jobs and the like;
- `default_pod` adds the defaults only a Pod gets (requests copied from limits,
  enableServiceLinks, hostPort under hostNetwork), so that a new default never changes a
  template and rolls out every workload.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pinnace.api.core.image_reference import image_tag
from pinnace.api.core.pod_shape import (
    Obj,
    all_containers,
    as_dict,
    child_dict,
    dict_items,
)
from pinnace.resources.quantity import Quantity, QuantityError

DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS = 30
DEFAULT_SCHEDULER_NAME = "default-scheduler"
TERMINATION_MESSAGE_PATH_DEFAULT = "/dev/termination-log"
DEFAULT_FILE_MODE = 0o644  # 420, as the API shows it
DEFAULT_SERVICE_ACCOUNT_TOKEN_EXPIRATION_SECONDS = 3600

# Scalar defaults of the less common volume sources, field by field.
_VOLUME_SOURCE_DEFAULTS: dict[str, dict[str, Any]] = {
    "iscsi": {"iscsiInterface": "default"},
    "rbd": {"pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring"},
    "azureDisk": {
        "cachingMode": "ReadWrite",
        "fsType": "ext4",
        "readOnly": False,
        "kind": "Shared",
    },
    "scaleIO": {"storageMode": "ThinProvisioned", "fsType": "xfs"},
}
_MODE_DEFAULTED_SOURCES = ("secret", "configMap", "downwardAPI", "projected")


def default_image_pull_policy(image: str) -> str:
    return "Always" if image_tag(image) == "latest" else "IfNotPresent"


def default_pod(pod: Obj) -> None:
    """Defaults for a whole Pod object, in place. An absent (or null) spec decodes as Go's
    zero PodSpec, which gets its defaults like any other."""
    if pod.get("spec") is None:
        pod["spec"] = {}
    spec = child_dict(pod, "spec")
    if spec is None:
        return
    for list_name in ("containers", "initContainers"):
        for _, ctr in dict_items(spec.get(list_name)):
            _default_requests_to_limits(ctr)
    spec.setdefault("enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for list_name in ("containers", "initContainers"):
            for _, ctr in dict_items(spec.get(list_name)):
                for _, port in dict_items(ctr.get("ports")):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort")
    default_pod_spec(spec)


def default_pod_template(template: Obj) -> None:
    """Defaults for a PodTemplateSpec (`{metadata, spec}`) inside a workload, in place."""
    spec = child_dict(template, "spec")
    if spec is not None:
        default_pod_spec(spec)


def default_pod_spec(spec: Obj) -> None:
    """The defaults every PodSpec gets, in place."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS
    if not spec.get("schedulerName"):
        spec["schedulerName"] = DEFAULT_SCHEDULER_NAME
    _convert_service_account(spec)
    _round_resource_list(spec.get("overhead"))
    for _, volume in dict_items(spec.get("volumes")):
        _default_volume(volume)
    for _, _, ctr in all_containers(spec):
        _default_container(ctr)


def _convert_service_account(spec: Obj) -> None:
    """v1's deprecated `serviceAccount` names the account when `serviceAccountName` does not,
    and shows `serviceAccountName` whenever it is set (Convert_v1_PodSpec_To_core_PodSpec and
    back)."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if name and isinstance(name, str):
        spec["serviceAccountName"] = spec["serviceAccount"] = name


def _default_requests_to_limits(ctr: Obj) -> None:
    resources = child_dict(ctr, "resources")
    if resources is None:
        return
    limits = child_dict(resources, "limits")
    if limits is None:
        return
    requests = resources.get("requests")
    if requests is None:
        requests = resources["requests"] = {}
    if isinstance(requests, dict):
        for name, value in limits.items():
            requests.setdefault(name, value)


def _round_resource_list(resources: Any) -> None:
    """Round each quantity up to milli precision: `0.0001` cpu is stored as `1m`."""
    if not isinstance(resources, dict):
        return
    for name, value in resources.items():
        rounded = _rounded_text(value) if isinstance(value, str) else _rounded(value)
        if rounded is not None:
            resources[name] = rounded


@lru_cache(maxsize=1024)
def _rounded_text(value: str) -> str | None:
    """`_rounded` of a string: the same few quantities recur in every pod."""
    return _rounded(value)


def _rounded(value: Any) -> str | None:
    """The quantity rounded up to milli precision, None when that leaves it as it is or it
    is no quantity (validation reports that)."""
    try:
        quantity = Quantity(value)
    except (QuantityError, TypeError):
        return None
    rounded = Quantity(f"{quantity.milli_value()}m")
    return str(rounded) if rounded != quantity else None


_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_HOOKS = ("postStart", "preStop")


def _default_container(ctr: Obj) -> None:
    get = ctr.get
    if not get("imagePullPolicy"):
        image = get("image")
        ctr["imagePullPolicy"] = default_image_pull_policy(image if isinstance(image, str) else "")
    if not get("terminationMessagePath"):
        ctr["terminationMessagePath"] = TERMINATION_MESSAGE_PATH_DEFAULT
    if not get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    ports = get("ports")
    if isinstance(ports, list):
        for port in ports:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"
    env = get("env")
    if isinstance(env, list):
        for var in env:
            value_from = var.get("valueFrom") if isinstance(var, dict) else None
            if isinstance(value_from, dict):
                _default_field_ref(value_from)
    resources = get("resources")
    if isinstance(resources, dict):
        _round_resource_list(resources.get("limits"))
        _round_resource_list(resources.get("requests"))
    for probe_name in _PROBES:
        probe = get(probe_name)
        if isinstance(probe, dict):
            _default_probe(probe)
    lifecycle = get("lifecycle")
    if isinstance(lifecycle, dict):
        for hook_name in _HOOKS:
            hook = lifecycle.get(hook_name)
            if isinstance(hook, dict):
                _default_handler(hook)


def _default_probe(probe: Obj) -> None:
    for name, default in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(name):
            probe[name] = default
    _default_handler(probe)
    grpc = child_dict(probe, "grpc")
    if grpc is not None and grpc.get("service") is None:
        grpc["service"] = ""


def _default_handler(handler: Obj) -> None:
    http_get = child_dict(handler, "httpGet")
    if http_get is None:
        return
    if not http_get.get("path"):
        http_get["path"] = "/"
    if not http_get.get("scheme"):
        http_get["scheme"] = "HTTP"


def _default_field_ref(holder: Obj) -> None:
    field_ref = child_dict(holder, "fieldRef")
    if field_ref is not None and not field_ref.get("apiVersion"):
        field_ref["apiVersion"] = "v1"


def _default_volume(volume: Obj) -> None:
    if not any(key != "name" for key in volume):
        volume["emptyDir"] = {}
    for source_name in _MODE_DEFAULTED_SOURCES:
        source = child_dict(volume, source_name)
        if source is not None and source.get("defaultMode") is None:
            source["defaultMode"] = DEFAULT_FILE_MODE
    for source_name, defaults in _VOLUME_SOURCE_DEFAULTS.items():
        source = child_dict(volume, source_name)
        if source is not None:
            for key, value in defaults.items():
                if source.get(key) in (None, ""):
                    source[key] = value
    host_path = child_dict(volume, "hostPath")
    if host_path is not None and host_path.get("type") is None:
        host_path["type"] = ""
    for _, item in dict_items(as_dict(volume.get("downwardAPI")).get("items")):
        _default_field_ref(item)
    for _, source in dict_items(as_dict(volume.get("projected")).get("sources")):
        for _, item in dict_items(as_dict(source.get("downwardAPI")).get("items")):
            _default_field_ref(item)
        token = child_dict(source, "serviceAccountToken")
        if token is not None and not token.get("expirationSeconds"):
            token["expirationSeconds"] = DEFAULT_SERVICE_ACCOUNT_TOKEN_EXPIRATION_SECONDS
    claim_template = as_dict(as_dict(volume.get("ephemeral")).get("volumeClaimTemplate"))
    claim_spec = child_dict(claim_template, "spec")
    if claim_spec is not None and claim_spec.get("volumeMode") is None:
        claim_spec["volumeMode"] = "Filesystem"
