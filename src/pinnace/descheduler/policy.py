"""The DeschedulerPolicy file (apiVersion descheduler/v1alpha2): eviction limits, a node
selector, and profiles, each enabling plugins at the deschedule and balance extension points
with their args in pluginConfig, and the DefaultEvictor's args. Every error names the field
it is about (`profiles[0].pluginConfig[1].args.thresholds.cpu: Invalid value: ...`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

import yaml

from pinnace.api import field
from pinnace.api.field import Path
from pinnace.api.labels import LabelSelector, parse_selector
from pinnace.api.manifest import yaml_problem
from pinnace.descheduler.args import Args, PolicyError
from pinnace.descheduler.evictor import NO_LIMITS, EvictorArgs, Limits
from pinnace.descheduler.framework import BALANCE, DESCHEDULE, Strategy
from pinnace.descheduler.strategies import STRATEGIES

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"
DEFAULT_EVICTOR = "DefaultEvictor"
POINTS = (DESCHEDULE, BALANCE)
FILTER_POINTS = ("filter", "preEvictionFilter")
TOP_LEVEL = (
    "apiVersion",
    "kind",
    "profiles",
    "nodeSelector",
    "maxNoOfPodsToEvictPerNode",
    "maxNoOfPodsToEvictPerNamespace",
    "maxNoOfPodsToEvictTotal",
    "evictionFailureEventNotification",
)


@dataclass(frozen=True)
class Profile:
    name: str
    evictor: EvictorArgs
    strategies: tuple[Strategy, ...]


@dataclass(frozen=True)
class DeschedulerPolicy:
    profiles: tuple[Profile, ...]
    limits: Limits = NO_LIMITS
    node_selector: LabelSelector | None = None
    failure_events: bool = False
    """evictionFailureEventNotification: a Warning event on each pod not evicted."""


def load_file(path: str) -> DeschedulerPolicy:
    try:
        text = FilePath(path).read_text()
    except OSError as e:
        raise PolicyError(f"cannot read policy file {path}: {e.strerror}") from None
    return parse(text)


def parse(text: str) -> DeschedulerPolicy:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise PolicyError(f"the policy is not valid YAML: {yaml_problem(e)}") from None
    if not isinstance(raw, dict):
        raise PolicyError(f"the policy must be a {KIND} object (apiVersion {API_VERSION})")
    top = Args(raw, Path())
    _check_type(top)
    unknown = sorted(set(top.raw) - set(TOP_LEVEL))
    if unknown:
        raise PolicyError(f'{unknown[0]}: Invalid value: unknown field "{unknown[0]}"')
    raw_profiles = top.raw.get("profiles")
    if not raw_profiles:
        raise PolicyError(str(field.required(Path("profiles"), "at least one profile is needed")))
    if not isinstance(raw_profiles, list):
        raise PolicyError(str(field.invalid(Path("profiles"), raw_profiles, "must be a list")))
    profiles: list[Profile] = []
    for i, raw_profile in enumerate(raw_profiles):
        profile = _profile(raw_profile, Path("profiles").index(i))
        if any(p.name == profile.name for p in profiles):
            path = Path("profiles").index(i).child("name")
            raise PolicyError(str(field.duplicate(path, profile.name)))
        profiles.append(profile)
    return DeschedulerPolicy(
        tuple(profiles),
        Limits(
            top.integer("maxNoOfPodsToEvictPerNode"),
            top.integer("maxNoOfPodsToEvictPerNamespace"),
            top.integer("maxNoOfPodsToEvictTotal"),
        ),
        _node_selector(top.raw.get("nodeSelector")),
        top.boolean("evictionFailureEventNotification"),
    )


def _check_type(top: Args) -> None:
    api_version, kind = top.raw.get("apiVersion"), top.raw.get("kind")
    if api_version != API_VERSION:
        raise PolicyError(str(field.not_supported(Path("apiVersion"), api_version, [API_VERSION])))
    if kind != KIND:
        raise PolicyError(str(field.not_supported(Path("kind"), kind, [KIND])))


def _node_selector(raw: Any) -> LabelSelector | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise PolicyError(str(field.invalid(Path("nodeSelector"), raw, "must be a string")))
    try:
        return parse_selector(raw)
    except ValueError as e:
        raise PolicyError(str(field.invalid(Path("nodeSelector"), raw, str(e)))) from None


def _profile(raw: Any, path: Path) -> Profile:
    profile = Args(raw, path)
    name = profile.raw.get("name")
    if not name or not isinstance(name, str):
        raise PolicyError(str(field.required(path.child("name"))))
    configs = _plugin_configs(profile.raw.get("pluginConfig"), path.child("pluginConfig"))
    plugins = Args(profile.raw.get("plugins"), path.child("plugins"))
    enabled: list[str] = []
    for point, points in plugins.raw.items():
        point_path = plugins.path.child(point)
        if point in FILTER_POINTS:
            _check_filters(Args(points, point_path))
            continue
        if point not in POINTS:
            supported = [*POINTS, *FILTER_POINTS]
            raise PolicyError(str(field.not_supported(point_path, point, supported)))
        for j, name_ in enumerate(Args(points, point_path).strings("enabled")):
            at = point_path.child("enabled").index(j)
            cls = STRATEGIES.get(name_)
            if cls is None:
                raise PolicyError(str(field.not_supported(at, name_, sorted(STRATEGIES))))
            if cls.point != point:
                raise PolicyError(str(field.invalid(at, name_, f"not a {point} plugin")))
            if name_ in enabled:
                raise PolicyError(str(field.duplicate(at, name_)))
            enabled.append(name_)
    for name_, (args_path, _) in configs.items():
        if name_ != DEFAULT_EVICTOR and name_ not in STRATEGIES:
            supported = sorted([DEFAULT_EVICTOR, *STRATEGIES])
            raise PolicyError(str(field.not_supported(args_path.child("name"), name_, supported)))
    strategies = []
    for name_ in enabled:
        args_path, raw_args = configs.get(name_, (path.child("pluginConfig").key(name_), None))
        strategies.append(STRATEGIES[name_].from_args(Args(raw_args, args_path.child("args"))))
    evictor_path, evictor_args = configs.get(
        DEFAULT_EVICTOR, (path.child("pluginConfig").key(DEFAULT_EVICTOR), None)
    )
    evictor = EvictorArgs.read(Args(evictor_args, evictor_path.child("args")))
    return Profile(name, evictor, tuple(strategies))


def _plugin_configs(raw: Any, path: Path) -> Mapping[str, tuple[Path, Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise PolicyError(str(field.invalid(path, raw, "must be a list")))
    configs: dict[str, tuple[Path, Any]] = {}
    for i, entry in enumerate(raw):
        entry_args = Args(entry, path.index(i))
        name = entry_args.raw.get("name")
        if not name or not isinstance(name, str):
            raise PolicyError(str(field.required(path.index(i).child("name"))))
        if name in configs:
            raise PolicyError(str(field.duplicate(path.index(i).child("name"), name)))
        configs[name] = (path.index(i), entry_args.raw.get("args"))
    return configs


def _check_filters(points: Args) -> None:
    for j, name in enumerate(points.strings("enabled")):
        if name != DEFAULT_EVICTOR:
            at = points.path.child("enabled").index(j)
            raise PolicyError(str(field.not_supported(at, name, [DEFAULT_EVICTOR])))
