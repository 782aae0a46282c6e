"""Ingress, IngressClass and NetworkPolicy (networking.k8s.io/v1): defaulting and validation
vectors worded as kube-apiserver v1.32's pkg/apis/networking/validation, and their strategies
through the in-process API server."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api.networking.ingress import INGRESS
from pinnace.api.networking.ingressclass import INGRESS_CLASS
from pinnace.api.networking.networkpolicy import NETWORK_POLICY
from pinnace.api.status import StatusError

META = {"name": "web", "namespace": "default"}
BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


def messages(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def ingress(**spec: Any) -> dict[str, Any]:
    return {"metadata": dict(META), "spec": spec}


def rule(path: str, path_type: str | None = "Prefix", **backend: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": path, "backend": backend or BACKEND}
    if path_type is not None:
        entry["pathType"] = path_type
    return {"host": "example.com", "http": {"paths": [entry]}}


def policy(**spec: Any) -> dict[str, Any]:
    obj = {"metadata": dict(META), "spec": spec}
    NETWORK_POLICY.default(obj)
    return obj


# --- Ingress ----------------------------------------------------------------------------------


def test_a_documented_ingress_is_valid() -> None:
    tls = [{"hosts": ["example.com", "*.example.com"], "secretName": "tls"}]
    obj = ingress(ingressClassName="nginx", rules=[rule("/testpath")], tls=tls)
    assert INGRESS.validate(obj) == []


def test_an_ingress_needs_rules_or_a_default_backend() -> None:
    assert messages(INGRESS.validate(ingress())) == [
        "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` "
        "must be specified"
    ]
    assert INGRESS.validate(ingress(defaultBackend=BACKEND)) == []


def test_prefix_and_exact_paths_are_absolute_and_clean() -> None:
    assert messages(INGRESS.validate(ingress(rules=[rule("app")]))) == [
        'spec.rules[0].http.paths[0].path: Invalid value: "app": must be an absolute path'
    ]
    assert messages(INGRESS.validate(ingress(rules=[rule("/a//b/..", "Exact")]))) == [
        "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b/..\": must not contain '//'",
        "spec.rules[0].http.paths[0].path: Invalid value: \"/a//b/..\": cannot end with '/..'",
    ]
    assert INGRESS.validate(ingress(rules=[rule("", "ImplementationSpecific")])) == []


def test_a_path_needs_a_supported_path_type() -> None:
    assert messages(INGRESS.validate(ingress(rules=[rule("/", None)]))) == [
        "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"
    ]
    assert messages(INGRESS.validate(ingress(rules=[rule("/", "Regex")]))) == [
        'spec.rules[0].http.paths[0].pathType: Unsupported value: "Regex": supported values: '
        '"Exact", "ImplementationSpecific", "Prefix"'
    ]


def test_backends_name_a_service_port_or_a_resource() -> None:
    both = {"service": {"name": "web", "port": {"name": "http", "number": 80}}}
    assert messages(INGRESS.validate(ingress(defaultBackend=both))) == [
        'spec.defaultBackend: Invalid value: "": cannot set both port name & port number'
    ]
    no_port = {"service": {"name": "Web", "port": {}}}
    assert messages(INGRESS.validate(ingress(defaultBackend=no_port))) == [
        'spec.defaultBackend.service.name: Invalid value: "Web": a DNS-1035 label must consist '
        "of lower case alphanumeric characters or '-', start with an alphabetic character, and "
        "end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        "spec.defaultBackend: Required value: port name or number is required",
    ]
    assert messages(INGRESS.validate(ingress(defaultBackend={}))) == [
        'spec.defaultBackend: Invalid value: "": resource or service backend is required'
    ]
    resource = {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket"}}
    assert messages(INGRESS.validate(ingress(defaultBackend=resource))) == [
        "spec.defaultBackend.resource.name: Required value"
    ]


def test_hosts_are_dns_names_not_ips() -> None:
    obj = ingress(rules=[{**rule("/"), "host": "10.0.0.1"}, {**rule("/"), "host": "*.*.x"}])
    assert messages(INGRESS.validate(obj)) == [
        'spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
        'spec.rules[1].host: Invalid value: "*.*.x": a wildcard DNS-1123 subdomain must start '
        "with '*.', followed by a valid DNS subdomain, which must consist of lower case "
        "alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. "
        "'*.example.com', regex used for validation is "
        "'\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ]


def test_the_class_annotation_must_agree_with_the_class_name() -> None:
    obj = ingress(ingressClassName="nginx", defaultBackend=BACKEND)
    obj["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "traefik"}
    assert messages(INGRESS.validate(obj)) == [
        'annotations.kubernetes.io/ingress.class: Invalid value: "traefik": must match '
        "`ingressClassName` when both are specified"
    ]
    obj["spec"].pop("ingressClassName")
    assert INGRESS.warnings_on_create(obj) == [
        'annotation "kubernetes.io/ingress.class" is deprecated, please use '
        "'spec.ingressClassName' instead"
    ]
    obj["spec"]["ingressClassName"] = "nginx"
    assert INGRESS.warnings_on_create(obj) == []
    # Only on create: an update keeps what was stored.
    stored = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "1"}}
    assert INGRESS.validate_update(stored, stored) == []


def test_an_invalid_tls_secret_name_stored_before_stays_allowed() -> None:
    obj = ingress(defaultBackend=BACKEND, tls=[{"secretName": "Bad_Name"}])
    assert messages(INGRESS.validate(obj)) == [
        'spec.tls[0].secretName: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must '
        "consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]
    obj["metadata"]["resourceVersion"] = "1"
    assert INGRESS.validate_update(obj, copy.deepcopy(obj)) == []


def test_status_addresses_are_ips_and_dns_names() -> None:
    old = {**ingress(defaultBackend=BACKEND), "metadata": {**META, "resourceVersion": "1"}}
    new = copy.deepcopy(old)
    new["status"] = {"loadBalancer": {"ingress": [{"ip": "300.1.1.1"}, {"hostname": "1.2.3.4"}]}}
    assert messages(INGRESS.validate_status_update(new, old)) == [
        'status.loadBalancer.ingress[0].ip: Invalid value: "300.1.1.1": must be a valid IP '
        "address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        'status.loadBalancer.ingress[1].hostname: Invalid value: "1.2.3.4": must be a DNS name, '
        "not an IP address",
    ]


# --- IngressClass -----------------------------------------------------------------------------


def ingress_class(**spec: Any) -> dict[str, Any]:
    obj = {"metadata": {"name": "nginx"}, "spec": spec}
    INGRESS_CLASS.default(obj)
    return obj


def test_the_controller_is_a_domain_prefixed_path() -> None:
    assert INGRESS_CLASS.validate(ingress_class(controller="k8s.io/ingress-nginx")) == []
    assert messages(INGRESS_CLASS.validate(ingress_class(controller="nginx"))) == [
        'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as '
        '"acme.io/foo")'
    ]
    assert messages(INGRESS_CLASS.validate(ingress_class())) == ["spec.controller: Required value"]
    assert messages(INGRESS_CLASS.validate(ingress_class(controller="k8s.io/a b"))) == [
        'spec.controller: Invalid value: "a b": Invalid path (regex used for validation is '
        "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
    ]


def test_parameters_default_to_cluster_scope() -> None:
    params = {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external"}
    obj = ingress_class(controller="example.com/lb", parameters=params)
    assert obj["spec"]["parameters"]["scope"] == "Cluster"
    assert INGRESS_CLASS.validate(obj) == []
    obj["spec"]["parameters"]["namespace"] = "lb"
    assert messages(INGRESS_CLASS.validate(obj)) == [
        "spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"
    ]
    obj["spec"]["parameters"].update(scope="Namespace", namespace=None)
    del obj["spec"]["parameters"]["namespace"]
    assert messages(INGRESS_CLASS.validate(obj)) == [
        "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'"
    ]


def test_the_controller_never_changes() -> None:
    old = ingress_class(controller="example.com/lb")
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["controller"] = "example.com/other"
    assert messages(INGRESS_CLASS.validate_update(new, old)) == [
        'spec.controller: Invalid value: "example.com/other": field is immutable'
    ]


# --- NetworkPolicy ----------------------------------------------------------------------------


def test_defaults_policy_types_and_port_protocols() -> None:
    obj = policy(ingress=[{"ports": [{"port": 80}]}])
    assert obj["spec"] == {
        "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}],
        "podSelector": {},
        "policyTypes": ["Ingress"],
    }
    obj = policy(egress=[{"ports": [{"port": 53, "protocol": "UDP"}]}])
    assert obj["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert obj["spec"]["egress"][0]["ports"][0]["protocol"] == "UDP"
    assert policy(policyTypes=["Egress"])["spec"]["policyTypes"] == ["Egress"]


def test_ports_are_numbers_names_or_ranges() -> None:
    ports = [
        {"port": 0},
        {"port": 32000, "endPort": 31000},
        {"port": "http", "endPort": 90},
        {"endPort": 90},
        {"port": 80, "protocol": "ICMP"},
    ]
    assert messages(NETWORK_POLICY.validate(policy(ingress=[{"ports": ports}]))) == [
        "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        "spec.ingress[0].ports[1].endPort: Invalid value: 31000: must be greater than or equal "
        "to `port`",
        "spec.ingress[0].ports[2].endPort: Invalid value: 90: may not be specified when `port` "
        "is non-numeric",
        "spec.ingress[0].ports[3].endPort: Invalid value: 90: may not be specified when `port` "
        "is not specified",
        'spec.ingress[0].ports[4].protocol: Unsupported value: "ICMP": supported values: "TCP", '
        '"UDP", "SCTP"',
    ]


def test_ip_blocks_hold_cidrs_and_exceptions_strictly_inside() -> None:
    block = {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24", "172.18.0.0/24", "10.0/8"]}
    obj = policy(egress=[{"to": [{"ipBlock": block}, {"ipBlock": {"cidr": "nope"}}]}])
    assert messages(NETWORK_POLICY.validate(obj)) == [
        'spec.egress[0].to[0].ipBlock.except[1]: Invalid value: "172.18.0.0/24": must be a '
        "strict subset of `cidr`",
        'spec.egress[0].to[0].ipBlock.except[2]: Invalid value: "10.0/8": must be a valid CIDR '
        "value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        'spec.egress[0].to[1].ipBlock.cidr: Invalid value: "nope": must be a valid CIDR value, '
        "(e.g. 10.9.8.0/24 or 2001:db8::/64)",
    ]
    assert messages(NETWORK_POLICY.validate(policy(egress=[{"to": [{"ipBlock": {}}]}]))) == [
        "spec.egress[0].to[0].ipBlock.cidr: Required value"
    ]


def test_a_peer_is_pods_namespaces_or_an_ip_block() -> None:
    both = {"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}
    obj = policy(ingress=[{"from": [{}, both]}])
    assert messages(NETWORK_POLICY.validate(obj)) == [
        "spec.ingress[0].from[0]: Required value: must specify a peer",
        "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
    ]
    pods_in_namespaces = {"podSelector": {}, "namespaceSelector": {"matchLabels": {"a": "b"}}}
    assert NETWORK_POLICY.validate(policy(ingress=[{"from": [pods_in_namespaces]}])) == []


def test_policy_types_are_ingress_and_egress_at_most_once_each() -> None:
    assert messages(NETWORK_POLICY.validate(policy(policyTypes=["Ingress", "Both"]))) == [
        'spec.policyTypes[1]: Unsupported value: "Both": supported values: "Ingress", "Egress"'
    ]
    three = policy(policyTypes=["Ingress", "Egress", "Ingress"])
    assert messages(NETWORK_POLICY.validate(three)) == [
        'spec.policyTypes: Invalid value: []networking.PolicyType{"Ingress", "Egress", '
        '"Ingress"}: may not specify more than two policyTypes'
    ]


# --- through the API server -------------------------------------------------------------------


def test_strategies_set_status_and_generation(api: Any) -> None:
    created = api.call(api.server.create, INGRESS, "default", ingress(defaultBackend=BACKEND))
    stored = created.obj
    assert stored["status"] == {"loadBalancer": {}}
    assert stored["metadata"]["generation"] == 1
    changed = copy.deepcopy(stored)
    changed["spec"]["ingressClassName"] = "nginx"
    changed["status"] = {"loadBalancer": {"ingress": [{"ip": "10.0.0.9"}]}}
    updated = api.call(api.server.update, INGRESS, "default", "web", changed).obj
    assert updated["metadata"]["generation"] == 2
    assert updated["status"] == {"loadBalancer": {}}

    made = api.call(api.server.create, NETWORK_POLICY, "default", policy()).obj
    assert made["metadata"]["generation"] == 1
    assert made["spec"]["policyTypes"] == ["Ingress"]


def test_a_bad_policy_is_refused_with_kube_apiservers_error(api: Any) -> None:
    bad = policy(ingress=[{"ports": [{"port": 70000}]}])
    with pytest.raises(StatusError) as refused:
        api.call(api.server.create, NETWORK_POLICY, "default", bad)
    assert refused.value.code == 422
    assert refused.value.message == (
        'NetworkPolicy.networking.k8s.io "web" is invalid: spec.ingress[0].ports[0].port: '
        "Invalid value: 70000: must be between 1 and 65535, inclusive"
    )


def test_default_ingress_class_admission(api: Any) -> None:
    """DefaultIngressClass: the newest class annotated as default (not the first by name), on
    create, for an Ingress that names no class."""
    for name in ("a", "b"):
        obj = {
            "metadata": {
                "name": name,
                "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
            },
            "spec": {"controller": "example.com/lb"},
        }
        api.call(api.server.create, INGRESS_CLASS, "", obj)
        api.call(api.server.clock.sleep, 5)
    defaulted = api.call(api.server.create, INGRESS, "default", ingress(defaultBackend=BACKEND))
    assert defaulted.obj["spec"]["ingressClassName"] == "b"
    annotated = ingress(defaultBackend=BACKEND)
    annotated["metadata"].update(name="annotated", annotations={"kubernetes.io/ingress.class": "x"})
    kept = api.call(api.server.create, INGRESS, "default", annotated).obj
    assert "ingressClassName" not in kept["spec"]
