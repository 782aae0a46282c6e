"""networking.k8s.io/v1's ingresses, ingress classes and network policies (printers.go's
printIngress, printIngressClass and printNetworkPolicy)."""

from __future__ import annotations

from pinnace.api.tables.columns import (
    Column,
    Object,
    Printer,
    Row,
    age_column,
    age_of,
    items,
    name_column,
    name_of,
    section,
)
from pinnace.api.tables.formats import NONE, format_label_selector

_MAX_HOSTS = 3
# extensions/v1beta1 NetworkPolicySpec's podSelector documentation, which v1.32 still shows.
_POD_SELECTOR_DOC = (
    "Selects the pods to which this NetworkPolicy object applies.  The array of ingress rules "
    "is applied to any pods selected by this field. Multiple network policies can select the "
    "same set of pods.  In this case, the ingress rules for each are combined additively. This "
    "field is NOT optional and follows standard label selector semantics. An empty podSelector "
    "matches all pods in this namespace."
)


def _hosts(rules: list[Object]) -> str:
    """formatHosts: the first three rule hosts, `*` when no rule names one."""
    hosts: list[str] = []
    more = False
    for rule in rules:
        if len(hosts) == _MAX_HOSTS:
            more = True
        if not more and rule.get("host"):
            hosts.append(str(rule["host"]))
    if not hosts:
        return "*"
    shown = ",".join(hosts)
    return f"{shown} + {len(rules) - _MAX_HOSTS} more..." if more else shown


def _addresses(ingress: Object) -> str:
    """ingressLoadBalancerStatusStringer, wide as kube-apiserver prints it: each entry's IP,
    else its hostname, sorted and without repeats."""
    found = set()
    for entry in items(ingress, "status", "loadBalancer", "ingress"):
        address = entry.get("ip") or entry.get("hostname")
        if address:
            found.add(str(address))
    return ",".join(sorted(found))


def _ingress_row(ingress: Object, now: float) -> Row:
    spec = section(ingress, "spec")
    class_name = spec.get("ingressClassName")
    return Row(
        [
            name_of(ingress),
            NONE if class_name is None else str(class_name),
            _hosts(items(ingress, "spec", "rules")),
            _addresses(ingress),
            "80, 443" if items(ingress, "spec", "tls") else "80",
            age_of(ingress, now),
        ]
    )


INGRESSES = Printer(
    (
        name_column(),
        Column(
            "Class",
            "string",
            "The name of the IngressClass resource that should be used for additional "
            "configuration",
        ),
        Column(
            "Hosts",
            "string",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        Column(
            "Address", "string", "Address is a list containing ingress points for the load-balancer"
        ),
        Column("Ports", "string", "Ports of TLS configurations that open"),
        age_column(),
    ),
    _ingress_row,
)


def _parameters(ingress_class: Object) -> str:
    parameters = section(ingress_class, "spec", "parameters")
    if not parameters:
        return NONE
    kind = str(parameters.get("kind") or "")
    group = parameters.get("apiGroup")
    if group is not None:
        kind = f"{kind}.{group}"
    return f"{kind}/{parameters.get('name') or ''}"


INGRESS_CLASSES = Printer(
    (
        name_column(),
        Column("Controller", "string", "Controller that is responsible for handling this class"),
        Column("Parameters", "string", "A reference to a resource with additional parameters"),
        age_column(),
    ),
    lambda ic, now: Row(
        [
            name_of(ic),
            str(section(ic, "spec").get("controller") or ""),
            _parameters(ic),
            age_of(ic, now),
        ]
    ),
)

NETWORK_POLICIES = Printer(
    (name_column(), Column("Pod-Selector", "string", _POD_SELECTOR_DOC), age_column()),
    lambda np, now: Row(
        [
            name_of(np),
            format_label_selector(section(np, "spec", "podSelector")),
            age_of(np, now),
        ]
    ),
)
