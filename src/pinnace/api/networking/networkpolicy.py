"""NetworkPolicy (networking.k8s.io/v1): defaulting, the registry strategy and validation as
Kubernetes v1.32 (pkg/apis/networking/v1/defaults.go SetDefaults_NetworkPolicy and
SetDefaults_NetworkPolicyPort, pkg/registry/networking/networkpolicy/strategy.go,
pkg/apis/networking/validation ValidateNetworkPolicy and ValidateNetworkPolicyUpdate).

kube-apiserver stores and validates policies; enforcing them is the network plugin's work,
outside kube-apiserver, kube-controller-manager and the kubelet.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from pinnace.api import field
from pinnace.api.apps import bump_generation_on_spec_change, start_generation
from pinnace.api.core.pod_shape import as_dict, as_list, as_str, child_dict, dict_items
from pinnace.api.core.service import validate_cidr
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.labels import validate_label_selector
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_valid_port_name, is_valid_port_num
from pinnace.api.validation import go_slice, is_int

PROTOCOLS = ("TCP", "UDP", "SCTP")
POLICY_TYPES = ("Ingress", "Egress")
_SPEC = Path("spec")
# (rules, peers) of each direction.
_DIRECTIONS = (("ingress", "from"), ("egress", "to"))


def default_network_policy(policy: Any) -> None:
    """SetDefaults_NetworkPolicy and its ports': TCP ports, and policyTypes from the rules
    (Ingress always, Egress when there are egress rules). The spec and its podSelector are
    structs in Go, so a stored policy always has them."""
    if not isinstance(policy, dict):
        return
    if policy.get("spec") is None:
        policy["spec"] = {}
    spec = child_dict(policy, "spec")
    if spec is None:
        return
    if spec.get("podSelector") is None:
        spec["podSelector"] = {}
    for rules, _ in _DIRECTIONS:
        for _, rule in dict_items(spec.get(rules)):
            for _, port in dict_items(rule.get("ports")):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def _validate_port(port: dict[str, Any], path: Path) -> list[FieldError]:
    """ValidateNetworkPolicyPort."""
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errs.append(field.not_supported(path.child("protocol"), protocol, PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    end_path = path.child("endPort")
    if number is None:
        if end is not None:
            message = "may not be specified when `port` is not specified"
            errs.append(field.invalid(end_path, end, message))
    elif is_int(number):
        errs += [field.invalid(path.child("port"), number, m) for m in is_valid_port_num(number)]
        if is_int(end):
            if end < number:
                errs.append(field.invalid(end_path, end, "must be greater than or equal to `port`"))
            errs += [field.invalid(end_path, end, m) for m in is_valid_port_num(end)]
    else:
        if end is not None:
            message = "may not be specified when `port` is non-numeric"
            errs.append(field.invalid(end_path, end, message))
        name = as_str(number)
        errs += [field.invalid(path.child("port"), name, m) for m in is_valid_port_name(name)]
    return errs


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def _validate_ip_block(block: dict[str, Any], path: Path) -> list[FieldError]:
    """ValidateIPBlock: a CIDR, and exceptions strictly inside it."""
    cidr = as_str(block.get("cidr"))
    if not cidr:
        return [field.required(path.child("cidr"))]
    errs = validate_cidr(cidr, path.child("cidr"))
    network = _network(cidr)
    if network is None:
        return errs
    for i, value in enumerate(as_list(block.get("except"))):
        text, except_path = as_str(value), path.child("except").index(i)
        errs += validate_cidr(text, except_path)
        excepted = _network(text)
        if excepted is None:
            continue
        inside = (
            excepted.version == network.version
            and excepted.network_address in network
            and network.prefixlen < excepted.prefixlen
        )
        if not inside:
            errs.append(field.invalid(except_path, text, "must be a strict subset of `cidr`"))
    return errs


def _validate_peer(
    peer: dict[str, Any], path: Path, allow_invalid_values: bool
) -> list[FieldError]:
    """ValidateNetworkPolicyPeer: exactly one kind of peer, or pods in namespaces."""
    errs: list[FieldError] = []
    for key in ("podSelector", "namespaceSelector"):
        selector = peer.get(key)
        if selector is not None:
            errs += validate_label_selector(
                as_dict(selector), path.child(key), allow_invalid_values
            )
    block = peer.get("ipBlock")
    if block is not None:
        errs += _validate_ip_block(as_dict(block), path.child("ipBlock"))
    count = sum(
        peer.get(key) is not None for key in ("podSelector", "namespaceSelector", "ipBlock")
    )
    if count == 0:
        errs.append(field.required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(field.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _validate_spec(spec: dict[str, Any], allow_invalid_values: bool) -> list[FieldError]:
    """ValidateNetworkPolicySpec."""
    errs = validate_label_selector(
        as_dict(spec.get("podSelector")), _SPEC.child("podSelector"), allow_invalid_values
    )
    for rules, peers in _DIRECTIONS:
        for i, rule in enumerate(as_list(spec.get(rules))):
            rule, rule_path = as_dict(rule), _SPEC.child(rules).index(i)
            for j, port in enumerate(as_list(rule.get("ports"))):
                errs += _validate_port(as_dict(port), rule_path.child("ports").index(j))
            for j, peer in enumerate(as_list(rule.get(peers))):
                peer_path = rule_path.child(peers).index(j)
                errs += _validate_peer(as_dict(peer), peer_path, allow_invalid_values)
    types = [as_str(t) for t in as_list(spec.get("policyTypes"))]
    types_path = _SPEC.child("policyTypes")
    if len(types) > len(POLICY_TYPES):
        shown = go_slice("networking.PolicyType", types)
        return [
            *errs,
            field.invalid(types_path, shown, "may not specify more than two policyTypes"),
        ]
    for i, policy_type in enumerate(types):
        if policy_type not in POLICY_TYPES:
            errs.append(field.not_supported(types_path.index(i), policy_type, POLICY_TYPES))
    return errs


def validate_network_policy(policy: Any) -> list[FieldError]:
    errs = validate_object_meta(policy, namespaced=True)
    if not isinstance(policy, dict):
        return errs
    return errs + _validate_spec(as_dict(policy.get("spec")), allow_invalid_values=False)


def validate_network_policy_update(new: Any, old: Any) -> list[FieldError]:
    """The strategy's ValidateUpdate: ValidateNetworkPolicy then ValidateNetworkPolicyUpdate,
    so the spec's errors come twice, as kube-apiserver reports them. Label values the stored
    podSelector already got wrong stay allowed (ValidationOptionsForNetworking)."""
    old_selector = as_dict(as_dict(as_dict(old).get("spec")).get("podSelector"))
    allow = bool(validate_label_selector(old_selector, _SPEC.child("podSelector")))
    errs = validate_object_meta(new, namespaced=True)
    if not isinstance(new, dict):
        return errs + validate_object_meta_update(new, old)
    spec_errs = _validate_spec(as_dict(new.get("spec")), allow)
    return errs + spec_errs + validate_object_meta_update(new, old) + spec_errs


NETWORK_POLICY = Kind(
    group="networking.k8s.io",
    version="v1",
    kind="NetworkPolicy",
    plural="networkpolicies",
    namespaced=True,
    model="V1NetworkPolicy",
    short_names=("netpol",),
    default=default_network_policy,
    prepare_for_create=start_generation,
    prepare_for_update=bump_generation_on_spec_change,
    validate=validate_network_policy,
    validate_update=validate_network_policy_update,
)
