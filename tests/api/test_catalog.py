"""The catalog against what kube-apiserver v1.32's discovery reports for the same resources."""

from __future__ import annotations

import pytest

from pinnace.api import catalog

# resource, group, version, kind, namespaced, short names, in "all", subresources
DISCOVERY = [
    ("bindings", "", "v1", "Binding", True, (), False, ()),
    ("componentstatuses", "", "v1", "ComponentStatus", False, ("cs",), False, ()),
    ("configmaps", "", "v1", "ConfigMap", True, ("cm",), False, ()),
    ("endpoints", "", "v1", "Endpoints", True, ("ep",), False, ()),
    ("events", "", "v1", "Event", True, ("ev",), False, ()),
    ("limitranges", "", "v1", "LimitRange", True, ("limits",), False, ()),
    ("namespaces", "", "v1", "Namespace", False, ("ns",), False, ("finalize", "status")),
    ("nodes", "", "v1", "Node", False, ("no",), False, ("proxy", "status")),
    (
        "persistentvolumeclaims",
        "",
        "v1",
        "PersistentVolumeClaim",
        True,
        ("pvc",),
        False,
        ("status",),
    ),
    ("persistentvolumes", "", "v1", "PersistentVolume", False, ("pv",), False, ("status",)),
    ("pods", "", "v1", "Pod", True, ("po",), True, None),
    ("podtemplates", "", "v1", "PodTemplate", True, (), False, ()),
    (
        "replicationcontrollers",
        "",
        "v1",
        "ReplicationController",
        True,
        ("rc",),
        True,
        ("scale", "status"),
    ),
    ("resourcequotas", "", "v1", "ResourceQuota", True, ("quota",), False, ("status",)),
    ("secrets", "", "v1", "Secret", True, (), False, ()),
    ("services", "", "v1", "Service", True, ("svc",), True, ("proxy", "status")),
    ("serviceaccounts", "", "v1", "ServiceAccount", True, ("sa",), False, ("token",)),
    ("controllerrevisions", "apps", "v1", "ControllerRevision", True, (), False, ()),
    ("daemonsets", "apps", "v1", "DaemonSet", True, ("ds",), True, ("status",)),
    ("deployments", "apps", "v1", "Deployment", True, ("deploy",), True, ("scale", "status")),
    ("replicasets", "apps", "v1", "ReplicaSet", True, ("rs",), True, ("scale", "status")),
    ("statefulsets", "apps", "v1", "StatefulSet", True, ("sts",), True, ("scale", "status")),
    (
        "horizontalpodautoscalers",
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        True,
        ("hpa",),
        True,
        ("status",),
    ),
    (
        "verticalpodautoscalers",
        "autoscaling.k8s.io",
        "v1",
        "VerticalPodAutoscaler",
        True,
        ("vpa",),
        False,
        ("status",),
    ),
    ("cronjobs", "batch", "v1", "CronJob", True, ("cj",), True, ("status",)),
    ("jobs", "batch", "v1", "Job", True, (), True, ("status",)),
    (
        "certificatesigningrequests",
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        False,
        ("csr",),
        False,
        ("approval", "status"),
    ),
    ("leases", "coordination.k8s.io", "v1", "Lease", True, (), False, ()),
    ("endpointslices", "discovery.k8s.io", "v1", "EndpointSlice", True, (), False, ()),
    ("ingressclasses", "networking.k8s.io", "v1", "IngressClass", False, (), False, ()),
    ("ingresses", "networking.k8s.io", "v1", "Ingress", True, ("ing",), False, ("status",)),
    (
        "networkpolicies",
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        True,
        ("netpol",),
        False,
        (),
    ),
    ("runtimeclasses", "node.k8s.io", "v1", "RuntimeClass", False, (), False, ()),
    (
        "poddisruptionbudgets",
        "policy",
        "v1",
        "PodDisruptionBudget",
        True,
        ("pdb",),
        False,
        ("status",),
    ),
    ("priorityclasses", "scheduling.k8s.io", "v1", "PriorityClass", False, ("pc",), False, ()),
    # v1.32 also serves csistoragecapacities, volumeattachments (and their status), which
    # Pinnace does not.
    ("csidrivers", "storage.k8s.io", "v1", "CSIDriver", False, (), False, ()),
    ("csinodes", "storage.k8s.io", "v1", "CSINode", False, (), False, ()),
    (
        "customresourcedefinitions",
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        False,
        ("status",),
    ),
    ("storageclasses", "storage.k8s.io", "v1", "StorageClass", False, ("sc",), False, ()),
    (
        "selfsubjectreviews",
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        False,
        (),
        False,
        (),
    ),
    ("tokenreviews", "authentication.k8s.io", "v1", "TokenReview", False, (), False, ()),
    (
        "localsubjectaccessreviews",
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        True,
        (),
        False,
        (),
    ),
    (
        "selfsubjectaccessreviews",
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        False,
        (),
        False,
        (),
    ),
    (
        "selfsubjectrulesreviews",
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        False,
        (),
        False,
        (),
    ),
    (
        "subjectaccessreviews",
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        False,
        (),
        False,
        (),
    ),
    (
        "clusterrolebindings",
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        False,
        (),
        False,
        (),
    ),
    ("clusterroles", "rbac.authorization.k8s.io", "v1", "ClusterRole", False, (), False, ()),
    ("rolebindings", "rbac.authorization.k8s.io", "v1", "RoleBinding", True, (), False, ()),
    ("roles", "rbac.authorization.k8s.io", "v1", "Role", True, (), False, ()),
]
POD_SUBRESOURCES = {
    "attach",
    "binding",
    "ephemeralcontainers",
    "eviction",
    "exec",
    "log",
    "portforward",
    "proxy",
    "status",
}


def test_every_served_kind_is_in_discovery_and_back() -> None:
    served = {(k.group, k.plural) for k in catalog.kinds()}
    assert served == {(row[1], row[0]) for row in DISCOVERY}


@pytest.mark.parametrize("row", DISCOVERY, ids=[row[0] for row in DISCOVERY])
def test_kind_matches_discovery(row: tuple) -> None:  # type: ignore[type-arg]
    plural, group, version, kind_name, namespaced, short_names, in_all, subresources = row
    kind = catalog.by_resource(group, plural)
    assert kind is not None
    assert (kind.version, kind.kind, kind.namespaced) == (version, kind_name, namespaced)
    assert set(kind.short_names) == set(short_names)
    assert ("all" in kind.categories) == in_all
    if subresources is None:
        assert set(kind.subresources) >= POD_SUBRESOURCES
    else:
        assert set(kind.subresources) == set(subresources)
    assert catalog.by_kind(kind.api_version, kind_name) is kind


@pytest.mark.parametrize(
    ("name", "plural"),
    [
        ("pods", "pods"),
        ("pod", "pods"),
        ("po", "pods"),
        ("Pod", "pods"),
        ("PODS", "pods"),
        ("deploy", "deployments"),
        ("deployments.apps", "deployments"),
        ("deploy.apps", "deployments"),
        ("deployments.v1.apps", "deployments"),
        ("quota", "resourcequotas"),
        ("limits", "limitranges"),
        ("ns", "namespaces"),
        ("no", "nodes"),
        ("ev", "events"),
        ("cm", "configmaps"),
        ("pc", "priorityclasses"),
        ("priorityclasses.scheduling.k8s.io", "priorityclasses"),
        ("lease", "leases"),
        ("hpa", "horizontalpodautoscalers"),
        ("horizontalpodautoscalers.autoscaling", "horizontalpodautoscalers"),
        ("pdb", "poddisruptionbudgets"),
        ("jobs.batch", "jobs"),
        ("svc", "services"),
        ("ep", "endpoints"),
        ("endpointslices.discovery.k8s.io", "endpointslices"),
        ("ing", "ingresses"),
        ("ingresses.networking.k8s.io", "ingresses"),
        ("netpol", "networkpolicies"),
        ("ingressclass", "ingressclasses"),
        ("podtemplates", "podtemplates"),
    ],
)
def test_resolve_names_kubectl_accepts(name: str, plural: str) -> None:
    kind = catalog.resolve(name)
    assert kind is not None
    assert kind.plural == plural


@pytest.mark.parametrize(
    "name", ["csistoragecapacities", "pods.apps", "deployments.v2.apps", "", "x.y.z"]
)
def test_resolve_unknown_names(name: str) -> None:
    assert catalog.resolve(name) is None


def test_lookups_of_unknown_kinds() -> None:
    assert catalog.by_kind("networking.k8s.io/v1beta1", "Ingress") is None
    assert catalog.by_kind("apps/v1", "Pod") is None
    assert catalog.by_resource("apps", "pods") is None


def test_kind_is_the_served_kind_and_refuses_an_unknown_one() -> None:
    assert catalog.kind("apps", "deployments").kind == "Deployment"
    with pytest.raises(LookupError, match="'pods' in group 'apps'"):
        catalog.kind("apps", "pods")
