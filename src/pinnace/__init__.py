"""Pinnace: Kubernetes' resource management and scheduling, re-implemented in Python.

The resource model is public API: objects are Kubernetes dicts as parsed from YAML or JSON,
resource maps are `{name: Quantity}`.
"""

from pinnace.resources.node import node_allocatable
from pinnace.resources.oom import oom_score_adj
from pinnace.resources.pod import pod_limits, pod_requests
from pinnace.resources.qos import qos_class
from pinnace.resources.quantity import Quantity

__version__ = "0.1.0"
KUBERNETES_REFERENCE = "v1.32"

__all__ = [
    "KUBERNETES_REFERENCE",
    "Quantity",
    "__version__",
    "node_allocatable",
    "oom_score_adj",
    "pod_limits",
    "pod_requests",
    "qos_class",
]
