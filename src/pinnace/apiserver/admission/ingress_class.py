"""DefaultIngressClass, as kube-apiserver v1.32's admission plugin of that name
(plugin/pkg/admission/network/defaultingressclass).

On an Ingress's create only: one that names no class (neither `spec.ingressClassName` nor the
`kubernetes.io/ingress.class` annotation) gets the default IngressClass, the one annotated
`ingressclass.kubernetes.io/is-default-class: "true"`; of several, the newest, ties going to
the first name.
"""

from __future__ import annotations

from collections.abc import Iterable

from pinnace.api.core.pod_shape import as_dict
from pinnace.api.networking.ingress import INGRESS_CLASS_ANNOTATION
from pinnace.api.objects import Object
from pinnace.apiserver.admission.storage import default_class

DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"


def is_default_ingress_class(ingress_class: Object) -> bool:
    annotations = as_dict(as_dict(ingress_class.get("metadata")).get("annotations"))
    return annotations.get(DEFAULT_CLASS_ANNOTATION) == "true"


def admit_ingress(ingress: Object, classes: Iterable[Object]) -> None:
    """DefaultIngressClass on an Ingress's create, in place."""
    spec = ingress.get("spec")
    if not isinstance(spec, dict) or spec.get("ingressClassName") is not None:
        return
    annotations = as_dict(as_dict(ingress.get("metadata")).get("annotations"))
    if INGRESS_CLASS_ANNOTATION in annotations:
        return
    found = default_class(classes, is_default_ingress_class)
    if found is not None:
        spec["ingressClassName"] = found["metadata"]["name"]
