"""Service (v1): defaulting, the registry strategy and validation as Kubernetes v1.32
(pkg/apis/core/v1/defaults.go SetDefaults_Service, pkg/registry/core/service/strategy.go,
pkg/apis/core/validation ValidateService and ValidateServiceUpdate).

Cluster IPs, IP families and node ports are allocated by the service storage
(`pinnace.apiserver.service_allocation`), between the strategy's preparation and validation,
as kube-apiserver's beginCreate and beginUpdate do.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_containers import validate_port_num_or_name
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_labels
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_port_num,
)
from pinnace.api.validation import GoValue, go_slice, go_struct, is_int

CLUSTER_IP_NONE = "None"
CLUSTER_IP, NODE_PORT, LOAD_BALANCER, EXTERNAL_NAME = (
    "ClusterIP",
    "NodePort",
    "LoadBalancer",
    "ExternalName",
)
DEFAULT_CLIENT_IP_TIMEOUT = 10800
MAX_CLIENT_IP_TIMEOUT = 86400
_SERVICE_TYPES = (CLUSTER_IP, EXTERNAL_NAME, LOAD_BALANCER, NODE_PORT)
_AFFINITIES = ("ClientIP", "None")
PROTOCOLS = ("SCTP", "TCP", "UDP")
_FAMILIES = ("IPv4", "IPv6")
_FAMILY_POLICIES = ("PreferDualStack", "RequireDualStack", "SingleStack")
_TRAFFIC_POLICIES = ("Cluster", "Local")
BAD_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_SPEC = Path("spec")
_CLUSTER_IPS = _SPEC.child("clusterIPs")


def _spec(svc: dict[str, Any]) -> dict[str, Any]:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def _ports(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in spec.get("ports") or () if isinstance(p, dict)]


def is_headless(svc: dict[str, Any]) -> bool:
    ips = (svc.get("spec") or {}).get("clusterIPs") or []
    return len(ips) == 1 and ips[0] == CLUSTER_IP_NONE


def needs_cluster_ip(svc: dict[str, Any]) -> bool:
    return (svc.get("spec") or {}).get("type") != EXTERNAL_NAME


def needs_node_port(svc: dict[str, Any]) -> bool:
    return (svc.get("spec") or {}).get("type") in (NODE_PORT, LOAD_BALANCER)


def externally_accessible(spec: dict[str, Any]) -> bool:
    """apiservice.ExternallyAccessible: a LoadBalancer or NodePort, or external IPs."""
    external = spec.get("type") in (LOAD_BALANCER, NODE_PORT)
    return external or (spec.get("type") == CLUSTER_IP and bool(spec.get("externalIPs")))


def _needs_health_check(spec: dict[str, Any]) -> bool:
    return spec.get("type") == LOAD_BALANCER and spec.get("externalTrafficPolicy") == "Local"


# --- defaulting ----------------------------------------------------------------------------


def default_service(svc: dict[str, Any]) -> None:
    spec = _spec(svc)
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = (spec.get("sessionAffinityConfig") or {}).get("clientIP") or {}
        if client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {
                "clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}
            }
    if not spec.get("type"):
        spec["type"] = CLUSTER_IP
    for port in _ports(spec):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in (
        NODE_PORT,
        LOAD_BALANCER,
        CLUSTER_IP,
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == LOAD_BALANCER and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if spec["type"] == LOAD_BALANCER:
        for ingress in _ingresses(svc):
            if ingress.get("ip") and ingress.get("ipMode") is None:
                ingress["ipMode"] = "VIP"


def _ingresses(svc: dict[str, Any]) -> list[dict[str, Any]]:
    balancer = (svc.get("status") or {}).get("loadBalancer") or {}
    return [i for i in balancer.get("ingress") or () if isinstance(i, dict)]


# --- the strategy --------------------------------------------------------------------------


def normalize_cluster_ips(new: dict[str, Any], old: dict[str, Any] | None) -> None:
    """Keep `clusterIP` and `clusterIPs` in step for clients that set only the first
    (NormalizeClusterIPs)."""
    spec, old_spec = _spec(new), (old or {}).get("spec") or {}
    ip, ips = spec.get("clusterIP") or "", spec.get("clusterIPs") or []
    if old is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip, old_ips = old_spec.get("clusterIP") or "", old_spec.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip:
        same = ips == old_ips
        if old_ip and not ip:
            if same:
                spec.pop("clusterIPs", None)
        elif same:
            spec["clusterIPs"] = [ip]


def patch_allocated_values(new: dict[str, Any], old: dict[str, Any]) -> None:
    """What an update leaves out, it keeps: the cluster IPs, node ports and health check
    port allocated before (patchAllocatedValues)."""
    spec, old_spec = _spec(new), old.get("spec") or {}
    if needs_cluster_ip(old) and needs_cluster_ip(new):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if needs_node_port(old) and needs_node_port(new):
        used = _node_ports(old_spec) & _node_ports(spec)
        by_name = {p.get("name", ""): p.get("nodePort", 0) for p in _ports(old_spec)}
        for port in _ports(spec):
            if not port.get("nodePort"):
                previous = by_name.get(port.get("name", ""), 0)
                if previous and previous not in used:
                    port["nodePort"] = previous
    both_check = _needs_health_check(old_spec) and _needs_health_check(spec)
    if both_check and not spec.get("healthCheckNodePort"):
        spec["healthCheckNodePort"] = old_spec.get("healthCheckNodePort")


def _node_ports(spec: dict[str, Any]) -> set[int]:
    return {p["nodePort"] for p in _ports(spec) if p.get("nodePort")}


def _drop_type_dependent_fields(new: dict[str, Any], old: dict[str, Any]) -> None:
    """A type change clears what only the old type used, when the update left it as it was
    (dropTypeDependentFields)."""
    spec, old_spec = _spec(new), old.get("spec") or {}
    if needs_cluster_ip(old) and not needs_cluster_ip(new):
        if spec.get("clusterIP") == old_spec.get("clusterIP") and spec.get(
            "clusterIPs"
        ) == old_spec.get("clusterIPs"):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        for key in ("ipFamilies", "ipFamilyPolicy"):
            if spec.get(key) == old_spec.get(key):
                spec.pop(key, None)
    if needs_node_port(old) and not needs_node_port(new):
        old_ports = _node_ports(old_spec)
        for port in _ports(spec):
            if port.get("nodePort") in old_ports:
                port.pop("nodePort", None)
    health = spec.get("healthCheckNodePort")
    if not _needs_health_check(spec) and health == old_spec.get("healthCheckNodePort"):
        spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == LOAD_BALANCER and spec.get("type") != LOAD_BALANCER:
        for key in ("allocateLoadBalancerNodePorts", "loadBalancerClass"):
            if spec.get(key) == old_spec.get(key):
                spec.pop(key, None)
    if not externally_accessible(spec) and spec.get("externalTrafficPolicy") == old_spec.get(
        "externalTrafficPolicy"
    ):
        spec.pop("externalTrafficPolicy", None)


def prepare_service_for_create(svc: dict[str, Any]) -> None:
    svc["status"] = {"loadBalancer": {}}
    normalize_cluster_ips(svc, None)


def prepare_service_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    new["status"] = dict(old.get("status") or {"loadBalancer": {}})
    patch_allocated_values(new, old)
    normalize_cluster_ips(new, old)
    _drop_type_dependent_fields(new, old)
    if _spec(new).get("type") != LOAD_BALANCER:
        # a load balancer's status goes with the type
        new["status"]["loadBalancer"] = {}


def prepare_service_for_status_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    new["spec"] = old.get("spec") or {}


# --- validation ----------------------------------------------------------------------------


def validate_service(svc: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(svc, namespaced=True, name_rule=is_dns1035_label)
    spec = svc.get("spec") or {}
    kind = spec.get("type") or ""
    headless = is_headless(svc)
    ports = _ports(spec)
    if not ports and not headless and kind != EXTERNAL_NAME:
        errs.append(field.required(_SPEC.child("ports")))
    errs += _validate_type_specifics(spec, kind, headless)
    names: set[str] = set()
    for i, port in enumerate(ports):
        errs += _validate_port(port, len(ports) > 1, names, _SPEC.child("ports").index(i))
    if isinstance(spec.get("selector"), dict):
        errs += validate_labels(spec["selector"], _SPEC.child("selector"))
    errs += _validate_affinity(spec)
    errs += validate_cluster_ip_fields(svc)
    for i, ip in enumerate(spec.get("externalIPs") or ()):
        errs += _validate_external_ip(ip, _SPEC.child("externalIPs").index(i))
    if not kind:
        errs.append(field.required(_SPEC.child("type")))
    elif kind not in _SERVICE_TYPES:
        errs.append(field.not_supported(_SPEC.child("type"), kind, _SERVICE_TYPES))
    errs += _validate_port_uniqueness(ports, kind)
    errs += _validate_load_balancer_fields(spec, kind)
    errs += _validate_traffic_policies(spec)
    return errs


def _validate_type_specifics(spec: dict[str, Any], kind: str, headless: bool) -> list[FieldError]:
    first_ip = _CLUSTER_IPS.index(0)
    if kind in (LOAD_BALANCER, NODE_PORT):
        if headless:
            return [
                field.invalid(first_ip, "None", f"may not be set to 'None' for {kind} services")
            ]
        return []
    if kind != EXTERNAL_NAME:
        return []
    errs = []
    if spec.get("clusterIPs"):
        errs.append(field.forbidden(_CLUSTER_IPS, "may not be set for ExternalName services"))
    if spec.get("ipFamilies"):
        errs.append(
            field.forbidden(_SPEC.child("ipFamilies"), "may not be set for ExternalName services")
        )
    if spec.get("ipFamilyPolicy") is not None:
        errs.append(
            field.forbidden(
                _SPEC.child("ipFamilyPolicy"), "may not be set for ExternalName services"
            )
        )
    cname = str(spec.get("externalName") or "").removesuffix(".")
    path = _SPEC.child("externalName")
    if cname:
        errs += [field.invalid(path, cname, m) for m in is_dns1123_subdomain(cname)]
    else:
        errs.append(field.required(path))
    return errs


def _validate_port(
    port: dict[str, Any], require_name: bool, names: set[str], path: Path
) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(field.required(path.child("name")))
    elif name:
        errs += [field.invalid(path.child("name"), name, m) for m in is_dns1123_label(name)]
        if name in names:
            errs.append(field.duplicate(path.child("name"), name))
        names.add(name)
    number = port.get("port", 0)
    errs += [field.invalid(path.child("port"), number, m) for m in is_valid_port_num(number)]
    protocol = port.get("protocol") or ""
    if not protocol:
        errs.append(field.required(path.child("protocol")))
    elif protocol not in PROTOCOLS:
        errs.append(field.not_supported(path.child("protocol"), protocol, PROTOCOLS))
    errs += validate_port_num_or_name(port.get("targetPort"), path.child("targetPort"))
    if port.get("appProtocol") is not None:
        app = port["appProtocol"]
        errs += [field.invalid(path.child("appProtocol"), app, m) for m in is_qualified_name(app)]
    return errs


def _validate_affinity(spec: dict[str, Any]) -> list[FieldError]:
    affinity = spec.get("sessionAffinity") or ""
    path = _SPEC.child("sessionAffinity")
    if not affinity:
        return [field.required(path)]
    if affinity not in _AFFINITIES:
        return [field.not_supported(path, affinity, _AFFINITIES)]
    config_path = _SPEC.child("sessionAffinityConfig")
    config = spec.get("sessionAffinityConfig")
    if affinity == "None":
        if config is not None:
            return [field.forbidden(config_path, "must not be set when session affinity is None")]
        return []
    detail = "when session affinity type is ClientIP"
    if config is None:
        return [field.required(config_path, detail)]
    if config.get("clientIP") is None:
        return [field.required(config_path.child("clientIP"), detail)]
    timeout_path = config_path.child("clientIP", "timeoutSeconds")
    timeout = config["clientIP"].get("timeoutSeconds")
    if timeout is None:
        return [field.required(timeout_path, detail)]
    if not is_int(timeout) or timeout <= 0 or timeout > MAX_CLIENT_IP_TIMEOUT:
        message = f"must be greater than 0 and less than {MAX_CLIENT_IP_TIMEOUT}"
        return [field.invalid(timeout_path, timeout, message)]
    return []


def is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _family(ip: str) -> str:
    return "IPv6" if ipaddress.ip_address(ip).version == 6 else "IPv4"


def validate_cluster_ip_fields(svc: dict[str, Any]) -> list[FieldError]:
    """clusterIP, clusterIPs, ipFamilies and ipFamilyPolicy together
    (ValidateServiceClusterIPsRelatedFields); the allocator runs it before it allocates."""
    spec = svc.get("spec") or {}
    if spec.get("type") == EXTERNAL_NAME:
        return []
    errs: list[FieldError] = []
    ip, ips = spec.get("clusterIP") or "", list(spec.get("clusterIPs") or [])
    shown = go_slice("string", ips)
    if ip:
        if not ips:
            errs.append(field.required(_CLUSTER_IPS))
        elif ips[0] != ip:
            errs.append(field.invalid(_CLUSTER_IPS, shown, "first value must match `clusterIP`"))
    elif ips:
        errs.append(
            field.invalid(_CLUSTER_IPS, shown, "must be empty when `clusterIP` is not specified")
        )
    families = list(spec.get("ipFamilies") or [])
    seen: set[str] = set()
    for i, family in enumerate(families):
        path = _SPEC.child("ipFamilies").index(i)
        if family not in _FAMILIES:
            errs.append(field.not_supported(path, family, _FAMILIES))
        if family in seen:
            errs.append(field.duplicate(path, family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _FAMILY_POLICIES:
        errs.append(field.not_supported(_SPEC.child("ipFamilyPolicy"), policy, _FAMILY_POLICIES))
    invalid_ips = False
    for i, value in enumerate(ips):
        if i == 0 and value == CLUSTER_IP_NONE:
            if len(ips) > 1:
                invalid_ips = True
                errs.append(
                    field.invalid(_CLUSTER_IPS, shown, "'None' must be the first and only value")
                )
            continue
        if not is_ip(value):
            invalid_ips = True
            errs.append(field.invalid(_CLUSTER_IPS.index(i), value, BAD_IP))
    if len(ips) > 2:
        errs.append(field.invalid(_CLUSTER_IPS, shown, "may only hold up to 2 values"))
    if invalid_ips:
        return errs
    if len(ips) > 1 and len({_family(v) for v in ips}) != len(ips):
        message = "may specify no more than one IP for each IP family"
        errs.append(field.invalid(_CLUSTER_IPS, shown, message))
    if not is_headless(svc) and ips and families:
        for i, value in enumerate(ips[: len(families)]):
            if families[i] in _FAMILIES and _family(value) != families[i]:
                message = f"expected an {families[i]} value as indicated by `ipFamilies[{i}]`"
                errs.append(field.invalid(_CLUSTER_IPS.index(i), value, message))
    return errs


def _validate_external_ip(ip: Any, path: Path) -> list[FieldError]:
    if not isinstance(ip, str) or not is_ip(ip):
        return [field.invalid(path, ip, BAD_IP)]
    return validate_non_special_ip(ip, path)


def validate_non_special_ip(ip: str, path: Path) -> list[FieldError]:
    """ValidateNonSpecialIP: an address a Service or an endpoint may use."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return [field.invalid(path, ip, "must be a valid IP address")]
    errs = []
    if address.is_unspecified:
        errs.append(field.invalid(path, ip, f"may not be unspecified ({ip})"))
    if address.is_loopback:
        message = "may not be in the loopback range (127.0.0.0/8, ::1/128)"
        errs.append(field.invalid(path, ip, message))
    if address.is_link_local:
        message = "may not be in the link-local range (169.254.0.0/16, fe80::/10)"
        errs.append(field.invalid(path, ip, message))
    if _is_link_local_multicast(address):
        message = "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"
        errs.append(field.invalid(path, ip, message))
    return errs


def _is_link_local_multicast(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    packed = address.packed
    if address.version == 4:
        return packed[:3] == bytes((224, 0, 0))
    return packed[0] == 0xFF and packed[1] & 0x0F == 0x02


def _go_service_port(protocol: str, port: int = 0, node_port: int = 0) -> GoValue:
    """The `core.ServicePort` key kube-apiserver reports a duplicate with."""
    return go_struct(
        "core.ServicePort",
        [
            ("Name", ""),
            ("Protocol", protocol),
            ("AppProtocol", GoValue("(*string)(nil)")),
            ("Port", port),
            ("TargetPort", GoValue('intstr.IntOrString{Type:0, IntVal:0, StrVal:""}')),
            ("NodePort", node_port),
        ],
    )


def _validate_port_uniqueness(ports: list[dict[str, Any]], kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    path = _SPEC.child("ports")
    if kind == CLUSTER_IP:
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                message = "may not be used when `type` is 'ClusterIP'"
                errs.append(field.forbidden(path.index(i).child("nodePort"), message))
    node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        if not port.get("nodePort"):
            continue
        key = (port.get("protocol") or "", port["nodePort"])
        if key in node_ports:
            errs.append(field.duplicate(path.index(i).child("nodePort"), port["nodePort"]))
        node_ports.add(key)
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (port.get("protocol") or "", port.get("port", 0))
        if key in seen:
            errs.append(field.duplicate(path.index(i), _go_service_port(*key)))
        seen.add(key)
    return errs


def _validate_load_balancer_fields(spec: dict[str, Any], kind: str) -> list[FieldError]:
    errs: list[FieldError] = []
    only_lb = "may only be used when `type` is 'LoadBalancer'"
    ranges = spec.get("loadBalancerSourceRanges") or []
    if ranges:
        path = _SPEC.child("LoadBalancerSourceRanges")
        if kind != LOAD_BALANCER:
            errs.append(field.forbidden(path, only_lb))
        for i, cidr in enumerate(ranges):
            errs += validate_cidr(str(cidr).strip(), path.index(i))
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != LOAD_BALANCER:
        errs.append(field.forbidden(_SPEC.child("allocateLoadBalancerNodePorts"), only_lb))
    if kind == LOAD_BALANCER and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(field.required(Path("allocateLoadBalancerNodePorts")))
    lb_class = spec.get("loadBalancerClass")
    if lb_class is not None:
        path = _SPEC.child("loadBalancerClass")
        if kind != LOAD_BALANCER:
            errs.append(field.forbidden(path, only_lb))
        else:
            errs += [field.invalid(path, lb_class, m) for m in is_qualified_name(lb_class)]
    return errs


def validate_cidr(cidr: str, path: Path) -> list[FieldError]:
    """validation.IsValidCIDR: an address with a prefix length, parsed leniently."""
    try:
        ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return [
            field.invalid(
                path, cidr, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
            )
        ]
    return []


def _validate_traffic_policies(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    external = spec.get("externalTrafficPolicy") or ""
    path = _SPEC.child("externalTrafficPolicy")
    if not externally_accessible(spec):
        if external:
            message = "may only be set for externally-accessible services"
            errs.append(field.invalid(path, external, message))
    elif not external:
        errs.append(field.required(path))
    elif external not in _TRAFFIC_POLICIES:
        errs.append(field.not_supported(path, external, _TRAFFIC_POLICIES))
    health = spec.get("healthCheckNodePort") or 0
    health_path = _SPEC.child("healthCheckNodePort")
    if not _needs_health_check(spec):
        if health:
            message = (
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is "
                "'Local'"
            )
            errs.append(field.invalid(health_path, health, message))
    elif health:
        errs += [field.invalid(health_path, health, m) for m in is_valid_port_num(health)]
    internal = spec.get("internalTrafficPolicy")
    internal_path = _SPEC.child("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in (NODE_PORT, LOAD_BALANCER, CLUSTER_IP):
            errs.append(field.required(internal_path))
    elif internal not in _TRAFFIC_POLICIES:
        errs.append(field.not_supported(internal_path, internal, _TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution != "PreferClose":
        errs.append(
            field.not_supported(_SPEC.child("trafficDistribution"), distribution, ["PreferClose"])
        )
    return errs


def validate_service_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _validate_cluster_ips_update(new, old)
    errs += _validate_ip_families_update(new, old)
    return errs + validate_service(new)


def _validate_cluster_ips_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The primary cluster IP may not change once set (validateUpgradeDowngradeClusterIPs)."""
    if not needs_cluster_ip(new) or not needs_cluster_ip(old):
        return []
    if is_headless(new) and is_headless(old):
        return []
    ips = list((new.get("spec") or {}).get("clusterIPs") or [])
    old_ips = list((old.get("spec") or {}).get("clusterIPs") or [])
    shown = go_slice("string", ips)
    errs: list[FieldError] = []
    if len(old_ips) == len(ips):
        for i, ip in enumerate(old_ips):
            if ip != ips[i]:
                errs.append(field.invalid(_CLUSTER_IPS.index(i), shown, "may not change once set"))
    elif len(old_ips) > len(ips):
        if not ips:
            errs.append(
                field.invalid(_CLUSTER_IPS.index(0), shown, "primary clusterIP can not be unset")
            )
        elif ips[0] != old_ips[0]:
            errs.append(field.invalid(_CLUSTER_IPS.index(0), shown, "may not change once set"))
    elif old_ips and ips[0] != old_ips[0]:
        errs.append(field.invalid(_CLUSTER_IPS.index(0), shown, "may not change once set"))
    return errs


def _validate_ip_families_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The primary IP family may not change once set (validateUpgradeDowngradeIPFamilies)."""
    if (
        not needs_cluster_ip(new)
        or not needs_cluster_ip(old)
        or is_headless(new)
        or is_headless(old)
    ):
        return []
    families = list((new.get("spec") or {}).get("ipFamilies") or [])
    old_families = list((old.get("spec") or {}).get("ipFamilies") or [])
    path = _SPEC.child("ipFamilies").index(0)
    if len(families) == len(old_families) and families != old_families:
        return [field.invalid(path, go_slice("core.IPFamily", families), "may not change once set")]
    if families and old_families and families[0] != old_families[0]:
        return [field.invalid(path, go_slice("core.IPFamily", families), "may not change once set")]
    return []


def validate_service_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + _validate_load_balancer_status(new)


def _validate_load_balancer_status(svc: dict[str, Any]) -> list[FieldError]:
    """ValidateLoadBalancerStatus: what a load balancer controller may report."""
    path = Path("status", "loadBalancer", "ingress")
    ingresses = _ingresses(svc)
    if ingresses and _spec(svc).get("type") != LOAD_BALANCER:
        return [field.forbidden(path, "may only be used when `spec.type` is 'LoadBalancer'")]
    errs: list[FieldError] = []
    for i, ingress in enumerate(ingresses):
        at = path.index(i)
        ip, mode, hostname = ingress.get("ip") or "", ingress.get("ipMode"), ingress.get("hostname")
        if ip and not is_ip(ip):
            errs.append(field.invalid(at.child("ip"), ip, BAD_IP))
        if mode is None:
            if ip:
                errs.append(
                    field.required(at.child("ipMode"), "must be specified when `ip` is set")
                )
        elif not ip:
            errs.append(
                field.forbidden(at.child("ipMode"), "may not be specified when `ip` is not set")
            )
        elif mode not in ("Proxy", "VIP"):
            errs.append(field.not_supported(at.child("ipMode"), mode, ["Proxy", "VIP"]))
        if hostname:
            errs += [
                field.invalid(at.child("hostname"), hostname, m)
                for m in is_dns1123_subdomain(hostname)
            ]
            if is_ip(hostname):
                errs.append(
                    field.invalid(
                        at.child("hostname"), hostname, "must be a DNS name, not an IP address"
                    )
                )
    return errs


SERVICE = Kind(
    group="",
    version="v1",
    kind="Service",
    plural="services",
    namespaced=True,
    model="V1Service",
    short_names=("svc",),
    categories=("all",),
    subresources=("proxy", "status"),
    allow_create_on_update=True,
    default=default_service,
    prepare_for_create=prepare_service_for_create,
    prepare_for_update=prepare_service_for_update,
    prepare_for_status_update=prepare_service_for_status_update,
    validate=validate_service,
    validate_update=validate_service_update,
    validate_status_update=validate_service_status_update,
)
