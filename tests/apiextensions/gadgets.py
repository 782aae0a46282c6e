"""The `gadgets.example.com` CRD the in-process CRD tests build on: one served and stored
version, v1, with the schema a test gives."""

from __future__ import annotations

from typing import Any

from pinnace.api.objects import Object


def gadget_crd(schema: dict[str, Any]) -> Object:
    """The CRD, its v1 validated by `schema` (the openAPIV3Schema)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com", "resourceVersion": "1"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "conversion": {"strategy": "None"},
            "names": {
                "plural": "gadgets",
                "singular": "gadget",
                "kind": "Gadget",
                "listKind": "GadgetList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }
