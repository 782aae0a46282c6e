"""kube-scheduler's strict decoding of a KubeSchedulerConfiguration (kubescheduler.config.k8s.io
/v1, decoded with serializer.EnableStrict): a field its types do not declare, or a key given
twice in the YAML, is an error, and so is one in the `args` of an in-tree plugin's pluginConfig
(staging/src/k8s.io/kube-scheduler/config/v1/types.go's DecodeNestedObjects decodes each into
its <Plugin>Args type, strictly; an out-of-tree plugin's args are left as written).

The errors are gathered and reported together as the versioning codec reports them: `strict
decoding error: ` and each, comma-separated, those of the document first, then each plugin's
(`decoding .profiles[0].pluginConfig[1]: strict decoding error: decoding args for plugin
NodeResourcesFit: strict decoding error: unknown field "scoringStrategy.resources[0].Name"`).
The YAML converter's error for keys given twice spans lines (`yaml: unmarshal errors:\\n  line
9: key "x" already set in map`); here it is on one.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import yaml

STRICT = "strict decoding error: "

_REQUIREMENTS = [{"key": None, "operator": None, "values": None}]
_NODE_SELECTOR_TERM = {"matchExpressions": _REQUIREMENTS, "matchFields": _REQUIREMENTS}
_RESOURCES = [{"name": None, "weight": None}]
_SHAPE = [{"utilization": None, "score": None}]
_TYPE_META = dict.fromkeys(("apiVersion", "kind"))

_ARGS: dict[str, dict[str, Any]] = {
    "DefaultPreemption": dict.fromkeys(
        ("minCandidateNodesPercentage", "minCandidateNodesAbsolute")
    ),
    "InterPodAffinity": dict.fromkeys(
        ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods")
    ),
    "NodeAffinity": {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [_NODE_SELECTOR_TERM]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": None, "preference": _NODE_SELECTOR_TERM}
            ],
        }
    },
    "NodeResourcesBalancedAllocation": {"resources": _RESOURCES},
    "NodeResourcesFit": {
        "ignoredResources": None,
        "ignoredResourceGroups": None,
        "scoringStrategy": {
            "type": None,
            "resources": _RESOURCES,
            "requestedToCapacityRatio": {"shape": _SHAPE},
        },
    },
    "PodTopologySpread": {
        "defaultingType": None,
        "defaultConstraints": [
            {
                **dict.fromkeys(
                    (
                        "maxSkew",
                        "topologyKey",
                        "whenUnsatisfiable",
                        "minDomains",
                        "nodeAffinityPolicy",
                        "nodeTaintsPolicy",
                        "matchLabelKeys",
                    )
                ),
                "labelSelector": {"matchLabels": None, "matchExpressions": _REQUIREMENTS},
            }
        ],
    },
    "VolumeBinding": {"bindTimeoutSeconds": None, "shape": _SHAPE},
}
PLUGIN_ARGS: Mapping[str, Mapping[str, Any]] = {
    name: {**_TYPE_META, **fields} for name, fields in _ARGS.items()
}
"""The fields of each in-tree plugin's v1 <Plugin>Args (None: not looked into)."""


def unknown_fields(raw: Any, fields: Any, path: str = "") -> list[str]:
    """The paths of `raw`'s fields that `fields` does not declare, as sigs.k8s.io/json's strict
    decoding names them (`profiles[0].plugins.score.enabled[0].wieght`)."""
    if isinstance(fields, list) and isinstance(raw, list):
        return [
            u for i, item in enumerate(raw) for u in unknown_fields(item, fields[0], f"{path}[{i}]")
        ]
    if not isinstance(fields, dict) or not isinstance(raw, dict):
        return []
    unknown: list[str] = []
    for name, value in raw.items():
        where = f"{path}.{name}" if path else str(name)
        if name not in fields:
            unknown.append(where)
        else:
            unknown.extend(unknown_fields(value, fields[name], where))
    return unknown


def args_errors(profile: int, index: int, name: str, args: Any) -> list[str]:
    """The strict decoding error of the args of the pluginConfig entry `index` of the profile
    `profile` (none for an out-of-tree plugin)."""
    fields = PLUGIN_ARGS.get(name)
    unknown = unknown_fields(args, fields) if fields is not None else []
    if not unknown:
        return []
    found = ", ".join(f'unknown field "{f}"' for f in unknown)
    return [
        f"decoding .profiles[{profile}].pluginConfig[{index}]: {STRICT}decoding args for "
        f"plugin {name}: {STRICT}{found}"
    ]


class DuplicateKeysLoader(yaml.SafeLoader):
    """YAML's safe loader that notes each key a mapping gives twice (the last one wins)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[str] = []

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the constructor refuses it
            if key in seen:
                line = key_node.start_mark.line + 1
                self.duplicates.append(f'line {line}: key "{key}" already set in map')
            seen.add(key)
        return super().construct_mapping(node, deep)


def load(text: str) -> tuple[Any, list[str]]:
    """The YAML document in `text`, and the strict decoding error of its duplicate keys."""
    loader = DuplicateKeysLoader(text)
    try:
        document = loader.get_single_data()
    finally:
        loader.dispose()
    duplicates = loader.duplicates
    return document, [f"yaml: unmarshal errors: {'; '.join(duplicates)}"] if duplicates else []
