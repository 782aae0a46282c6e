"""Feature gates: the alpha features of Kubernetes v1.32 Pinnace implements, off by default as
there (k8s.io/component-base/featuregate, pkg/features/kube_features.go).

One `FeatureGates` value is given to the cluster (`pinnace up --feature-gates`) and every
component reads it from there: the API server's defaulting, validation and subresources, the
node agents and the scheduler, as kube-apiserver, the kubelet and kube-scheduler each read
the same flag. Nothing reads process-wide state, so two clusters in one process may differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

IN_PLACE_POD_VERTICAL_SCALING = "InPlacePodVerticalScaling"
IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS = "InPlacePodVerticalScalingAllocatedStatus"

_GO_BOOLS = {
    **dict.fromkeys(("1", "t", "T", "true", "TRUE", "True"), True),
    **dict.fromkeys(("0", "f", "F", "false", "FALSE", "False"), False),
}


@dataclass(frozen=True)
class FeatureGates:
    """The gates Pinnace knows, each as v1.32 defaults it (alpha: off)."""

    in_place_pod_vertical_scaling: bool = False
    """KEP-1287: a running pod's container cpu and memory change through the pods/resize
    subresource, and its node's kubelet resizes it (alpha in v1.32)."""
    in_place_pod_vertical_scaling_allocated_status: bool = False
    """The kubelet reports `status.containerStatuses[].allocatedResources` (alpha in v1.32;
    needs InPlacePodVerticalScaling)."""

    @property
    def allocated_status(self) -> bool:
        """Whether pods show allocatedResources: both gates on, as v1.32 drops it otherwise."""
        return (
            self.in_place_pod_vertical_scaling
            and self.in_place_pod_vertical_scaling_allocated_status
        )


_NAMES = {
    IN_PLACE_POD_VERTICAL_SCALING: "in_place_pod_vertical_scaling",
    IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS: (
        "in_place_pod_vertical_scaling_allocated_status"
    ),
}
"""The flag's names of the gates, and the fields they set."""


def feature_gates(values: Mapping[str, bool]) -> FeatureGates:
    """The gates named in `values` (by their flag names) set, the others as defaulted. Raises
    ValueError for a name it does not know."""
    for name in values:
        if name not in _NAMES:
            raise ValueError(f"unrecognized feature gate: {name}")
    return FeatureGates(**{_NAMES[name]: value for name, value in values.items()})


def parse_feature_gates(text: str) -> FeatureGates:
    """`--feature-gates` as component-base reads it: comma-separated `Name=bool` pairs. Raises
    ValueError with its message for an unknown gate or a value that is not a Go boolean."""
    values: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep:
            raise ValueError(f"missing bool value for {name}")
        if name not in _NAMES:
            raise ValueError(f"unrecognized feature gate: {name}")
        if value not in _GO_BOOLS:
            raise ValueError(
                f'invalid value of {name}={value}, err: strconv.ParseBool: parsing "{value}": '
                "invalid syntax"
            )
        values[name] = _GO_BOOLS[value]
    return feature_gates(values)
