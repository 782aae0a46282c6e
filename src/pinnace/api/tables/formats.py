"""How printers.go writes the values that are not plain fields: label maps, label selectors,
container lists, quantities and int-or-strings."""

from __future__ import annotations

from typing import Any

from pinnace.api.labels import SelectorError, selector_from_dict
from pinnace.api.tables.columns import Object, items
from pinnace.resources.quantity import QuantityError, canonical_quantity

NONE = "<none>"


def format_labels(labels: Any) -> str:
    """labels.FormatLabels: `a=1,b=2` sorted by key, `<none>` when empty."""
    if not isinstance(labels, dict) or not labels:
        return NONE
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def selector_string(selector: Any) -> str | None:
    """A metav1.LabelSelector as selector.String(); None when it does not convert."""
    if selector is not None and not isinstance(selector, dict):
        return None
    try:
        return str(selector_from_dict(selector))
    except (SelectorError, ValueError, TypeError):
        return None


def format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: `<none>` for an empty selector, `<error>` for a bad one."""
    text = selector_string(selector)
    if text is None:
        return "<error>"
    return text or NONE


def container_cells(pod_spec: Object) -> tuple[str, str]:
    """The comma-joined container names and images of a pod spec (layoutContainerCells)."""
    containers = items(pod_spec, "containers")
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return names, images


def quantity(value: Any) -> str:
    """resource.Quantity.String(): the canonical form; `<nil>` for a missing pointer."""
    if value is None:
        return "<nil>"
    try:
        return canonical_quantity(str(value))
    except QuantityError:
        return str(value)


def int_or_string(value: Any) -> str:
    """intstr.IntOrString.String()."""
    return str(value)
