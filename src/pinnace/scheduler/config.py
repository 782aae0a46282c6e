"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): profiles by schedulerName,
plugins enabled and disabled per extension point (multiPoint too), pluginConfig arguments and
percentageOfNodesToScore, read from YAML and turned into the core's `Profile`s.

A profile starts from kube-scheduler v1.32's default plugins (all at multiPoint, with their
default score weights). `disabled: [{name: "*"}]` at an extension point drops every default
there. A plugin outside the tree is named by its Python import path, `module:Class`; see
docs/scheduler.md.

Every error names the field it is about (`profiles[0].plugins.score.enabled[1].name: ...`).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from pinnace.api.manifest import yaml_problem
from pinnace.scheduler.framework import Plugin, ReadsNodeUsage, extension_points
from pinnace.scheduler.plugins import DEFAULT_WEIGHTS, default_plugins
from pinnace.scheduler.plugins.default_binder import Binding
from pinnace.scheduler.plugins.default_preemption import DefaultPreemption
from pinnace.scheduler.plugins.load_variation_risk_balancing import LoadVariationRiskBalancing
from pinnace.scheduler.plugins.policy import PolicyPick, PolicyScore, model_beside
from pinnace.scheduler.plugins.target_load_packing import TargetLoadPacking
from pinnace.scheduler.podinfo import DEFAULT_SCHEDULER_NAME
from pinnace.scheduler.profile import Profile
from pinnace.scheduler.strict import STRICT, args_errors, load, unknown_fields

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
MULTI_POINT = "multiPoint"
EXTENSION_POINTS = {
    "preEnqueue": "pre_enqueue",
    "queueSort": "queue_sort",
    "preFilter": "pre_filter",
    "filter": "filter",
    "postFilter": "post_filter",
    "preScore": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "preBind": "pre_bind",
    "bind": "bind",
}
"""The extension points a profile configures, and the core's names for them."""
UNSUPPORTED_POINTS = ("permit", "postBind")
"""Extension points of kube-scheduler the core has no plugins for (accepted when empty)."""

OPTIONAL_IN_TREE: tuple[type, ...] = (
    DefaultPreemption,
    TargetLoadPacking,
    LoadVariationRiskBalancing,
    PolicyScore,
    PolicyPick,
)
"""Plugins a profile may enable by name besides the default ones: kube-scheduler's
DefaultPreemption, scheduler-plugins' Trimaran plugins, Pinnace's policy plugins."""
Bind = Callable[[Binding], object]
_FIELD_MESSAGE = re.compile(r"^[\w.\[\]]+: ")
"""A plugin's argument error that starts with the field it is about."""

_PLUGIN_SET: dict[str, Any] = {"enabled": [{"name": None, "weight": None}]}
_PLUGIN_SET["disabled"] = _PLUGIN_SET["enabled"]
_FIELDS: dict[str, Any] = {
    **dict.fromkeys(
        (
            "apiVersion",
            "kind",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "enableProfiling",
            "enableContentionProfiling",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "extenders",
            "delayCacheUntilActive",
        )
    ),
    "profiles": [
        {
            "schedulerName": None,
            "percentageOfNodesToScore": None,
            "plugins": dict.fromkeys(
                (*EXTENSION_POINTS, *UNSUPPORTED_POINTS, MULTI_POINT), _PLUGIN_SET
            ),
            "pluginConfig": [{"name": None, "args": None}],
        }
    ],
}
"""The fields of kubescheduler.config.k8s.io/v1's types a configuration may hold (None: not
looked into), which kube-scheduler decodes strictly."""


class ConfigError(ValueError):
    """A bad configuration; the message names the field."""


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 0  # 0: the default weight (1 for a plugin without one)


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass
class ProfileConfig:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    plugins: dict[str, PluginSet] = field(default_factory=dict)  # extension point -> set
    plugin_config: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> args
    percentage_of_nodes_to_score: int | None = None
    path: str = "profiles[0]"  # where it is in the file, for messages


@dataclass
class SchedulerConfiguration:
    profiles: list[ProfileConfig] = field(default_factory=lambda: [ProfileConfig()])
    percentage_of_nodes_to_score: int = 0  # 0: adaptive, as kube-scheduler's default
    plugin_dir: str = ""  # where plugins named module:Class are looked for first
    source: str = ""  # the file it was read from
    leader_election: dict[str, Any] = field(default_factory=dict)
    """The leaderElection section as written (`pinnace scheduler` reads it)."""
    written: dict[str, Any] = field(default_factory=dict)
    """The file's fields as written, those Pinnace does not act on too (/configz shows them)."""

    @property
    def scheduler_names(self) -> list[str]:
        return [p.scheduler_name for p in self.profiles]

    def describe(self) -> str:
        """Where it came from, for people: its file, or kube-scheduler's defaults."""
        return self.source or DEFAULTS


DEFAULTS = "kube-scheduler's defaults"


def load_file(path: str) -> SchedulerConfiguration:
    """The configuration in the file at `path`, checked down to each plugin's arguments."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"{path}: {e.strerror}") from None
    config = parse(text)
    config.source = os.path.abspath(path)
    config.plugin_dir = os.path.dirname(config.source)
    build_profiles(config, lambda binding: None)  # plugins import and take their arguments
    return config


def parse(text: str) -> SchedulerConfiguration:
    """A KubeSchedulerConfiguration from YAML (or JSON)."""
    try:
        raw, duplicates = load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"not valid YAML: {yaml_problem(e)}") from None
    return from_mapping(raw, duplicates)


def from_mapping(raw: Any, duplicates: Sequence[str] = ()) -> SchedulerConfiguration:
    """A KubeSchedulerConfiguration already read from YAML (another file's field);
    `duplicates`, the strict decoding error of the keys its YAML gave twice."""
    if not isinstance(raw, dict):
        raise ConfigError("a KubeSchedulerConfiguration must be a YAML mapping")
    if raw.get("apiVersion") != API_VERSION:
        raise ConfigError(
            f'apiVersion: Unsupported value: "{raw.get("apiVersion", "")}": '
            f'supported values: "{API_VERSION}"'
        )
    if raw.get("kind") != KIND:
        raise ConfigError(
            f'kind: Unsupported value: "{raw.get("kind", "")}": supported values: "{KIND}"'
        )
    errors = [
        *duplicates,
        *(f'unknown field "{f}"' for f in unknown_fields(raw, _FIELDS)),
        *_plugin_args_errors(raw.get("profiles")),
    ]
    if errors:
        raise ConfigError(STRICT + ", ".join(errors))
    election = raw.get("leaderElection") or {}
    if not isinstance(election, dict):
        raise ConfigError("leaderElection: Invalid value: must be a mapping")
    config = SchedulerConfiguration(
        percentage_of_nodes_to_score=_percentage(raw, "percentageOfNodesToScore") or 0,
        leader_election=election,
        written=raw,
    )
    profiles = _list(raw, "profiles", "profiles")
    if profiles:
        config.profiles = [_profile(p, f"profiles[{i}]") for i, p in enumerate(profiles)]
    seen: set[str] = set()
    for profile in config.profiles:
        if profile.scheduler_name in seen:
            raise ConfigError(
                f'{profile.path}.schedulerName: Duplicate value: "{profile.scheduler_name}"'
            )
        seen.add(profile.scheduler_name)
    return config


def _plugin_args_errors(profiles: Any) -> list[str]:
    """The strict decoding errors of the in-tree plugins' args, profile by profile."""
    if not isinstance(profiles, list):
        return []
    return [
        error
        for i, profile in enumerate(profiles)
        if isinstance(profile, dict) and isinstance(profile.get("pluginConfig"), list)
        for j, entry in enumerate(profile["pluginConfig"])
        if isinstance(entry, dict) and isinstance(entry.get("name"), str)
        for error in args_errors(i, j, entry["name"], entry.get("args"))
    ]


def _profile(raw: Any, path: str) -> ProfileConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: Invalid value: must be a mapping")
    name = raw.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{path}.schedulerName: Required value")
    profile = ProfileConfig(
        scheduler_name=name,
        percentage_of_nodes_to_score=_percentage(raw, "percentageOfNodesToScore", path),
        path=path,
    )
    plugins = raw.get("plugins") or {}
    if not isinstance(plugins, dict):
        raise ConfigError(f"{path}.plugins: Invalid value: must be a mapping")
    for point, value in plugins.items():
        where = f"{path}.plugins.{point}"
        if point != MULTI_POINT and point not in EXTENSION_POINTS:
            if point in UNSUPPORTED_POINTS and not (value or {}).get("enabled"):
                continue
            raise ConfigError(f"{where}: Unsupported value: Pinnace has no {point} plugins")
        profile.plugins[point] = _plugin_set(value or {}, where)
    for i, entry in enumerate(_list(raw, "pluginConfig", f"{path}.pluginConfig")):
        where = f"{path}.pluginConfig[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigError(f"{where}.name: Required value")
        if entry["name"] in profile.plugin_config:
            raise ConfigError(f'{where}.name: Duplicate value: "{entry["name"]}"')
        args = entry.get("args") or {}
        if not isinstance(args, dict):
            raise ConfigError(f"{where}.args: Invalid value: must be a mapping")
        profile.plugin_config[entry["name"]] = args
    return profile


def _plugin_set(raw: Any, path: str) -> PluginSet:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: Invalid value: must be a mapping")
    result = PluginSet()
    for key in ("enabled", "disabled"):
        for i, entry in enumerate(_list(raw, key, f"{path}.{key}")):
            where = f"{path}.{key}[{i}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                raise ConfigError(f"{where}.name: Required value")
            if key == "disabled":
                result.disabled.append(entry["name"])
                continue
            weight = entry.get("weight", 0)
            if not isinstance(weight, int) or weight < 0:
                raise ConfigError(f"{where}.weight: Invalid value: {weight!r}: must be >= 0")
            result.enabled.append(PluginRef(entry["name"], weight))
    return result


def _list(raw: Mapping[str, Any], key: str, path: str) -> list[Any]:
    value = raw.get(key) or []
    if not isinstance(value, list):
        raise ConfigError(f"{path}: Invalid value: must be a list")
    return value


def _percentage(raw: Mapping[str, Any], key: str, path: str = "") -> int | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        where = f"{path}.{key}" if path else key
        raise ConfigError(f"{where}: Invalid value: {value!r}: not in valid range [0-100]")
    return value


# --- building the core's profiles ------------------------------------------------------------


def build_profiles(config: SchedulerConfiguration, bind: Bind) -> list[Profile]:
    """One `Profile` per configured profile; `bind` is the DefaultBinder's callback."""
    if config.plugin_dir and config.plugin_dir not in sys.path:
        sys.path.insert(0, config.plugin_dir)  # the user's plugins may import their siblings
    for profile in config.profiles:
        for name in (PolicyScore.name, PolicyPick.name):
            if name in profile.plugin_config:
                args = profile.plugin_config[name]
                profile.plugin_config[name] = model_beside(args, config.plugin_dir)
    profiles = [_build(p, bind) for p in config.profiles]
    _check_usage_windows(config, profiles)
    sorts = {type(p.queue_sort) for p in profiles}
    if len(sorts) > 1:
        raise ConfigError(
            "profiles[1].plugins.queueSort: Invalid value: queueSort must be the "
            "same for all profiles"
        )
    return profiles


def _build(config: ProfileConfig, bind: Bind) -> Profile:
    defaults = {type(p).__name__: type(p) for p in default_plugins(bind)}
    in_tree = {**defaults, **{cls.__name__: cls for cls in OPTIONAL_IN_TREE}}
    chosen = {name: _Choice(cls, DEFAULT_WEIGHTS.get(name, 1)) for name, cls in defaults.items()}
    path = f"{config.path}.plugins"
    multi = config.plugins.get(MULTI_POINT, PluginSet())
    for name in _named(multi.disabled, defaults):
        chosen.pop(name, None)
    for i, ref in enumerate(multi.enabled):
        cls = _plugin_class(ref.name, in_tree, f"{path}.{MULTI_POINT}.enabled[{i}].name")
        chosen[ref.name] = _Choice(cls, ref.weight or DEFAULT_WEIGHTS.get(ref.name, 1))
    for point, core_point in EXTENSION_POINTS.items():
        plugin_set = config.plugins.get(point)
        if plugin_set is None:
            continue
        for name in _named(plugin_set.disabled, defaults):
            if name in chosen:
                chosen[name].disabled.add(core_point)
        for i, ref in enumerate(plugin_set.enabled):
            cls = _plugin_class(ref.name, in_tree, f"{path}.{point}.enabled[{i}].name")
            choice = chosen.setdefault(ref.name, _Choice(cls, 1, only=set()))
            choice.disabled.discard(core_point)
            choice.requested.add(core_point)
            if choice.only is not None:
                choice.only.add(core_point)
            if ref.weight and core_point == "score":
                choice.weight = ref.weight
    for name in config.plugin_config:
        if name not in chosen:
            raise ConfigError(
                f'{config.path}.pluginConfig: Invalid value: "{name}": no enabled plugin has '
                "that name"
            )
    plugins, weights = [], {}
    restricted: dict[str, set[str]] = {}
    for name, choice in chosen.items():
        plugin = _construct(choice.cls, name, config, bind)
        try:
            served = extension_points(plugin)
        except TypeError as e:
            raise ConfigError(f'{path}: Invalid value: "{name}": {e}') from None
        points = (served if choice.only is None else choice.only) - choice.disabled
        missing = choice.requested - served
        if missing:
            raise ConfigError(
                f'{path}: Invalid value: plugin "{name}" does not extend {_point_names(missing)}'
            )
        if not points:
            continue
        plugins.append(plugin)
        weights[plugin.name] = choice.weight
        if points != served:
            restricted[plugin.name] = points
    try:
        return Profile(
            plugins,
            weights,
            scheduler_name=config.scheduler_name,
            percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
            points=restricted,
        )
    except ValueError as e:
        raise ConfigError(f"{path}: Invalid value: {e}") from None


def _check_usage_windows(config: SchedulerConfiguration, profiles: Sequence[Profile]) -> None:
    """The node table keeps one window of usage, sampled at one interval: every plugin reading
    it must ask for the same."""
    first: ReadsNodeUsage | None = None
    for profile_config, profile in zip(config.profiles, profiles, strict=True):
        for plugin in profile.plugins:
            if not isinstance(plugin, ReadsNodeUsage):
                continue
            if first is None:
                first = plugin
            elif (plugin.usage_window, plugin.usage_interval) != (
                first.usage_window,
                first.usage_interval,
            ):
                raise ConfigError(
                    f'{profile_config.path}.pluginConfig: Invalid value: "{plugin.name}": its '
                    f"usageWindow and usageSampleInterval ({plugin.usage_window:g}s, "
                    f"{plugin.usage_interval:g}s) differ from {first.name}'s "
                    f"({first.usage_window:g}s, {first.usage_interval:g}s): the scheduler "
                    "keeps one window of node usage"
                )
            elif getattr(plugin, "load_metric", None) != getattr(first, "load_metric", None):
                raise ConfigError(
                    f'{profile_config.path}.pluginConfig: Invalid value: "{plugin.name}": its '
                    f"metricProvider differs from {first.name}'s: the scheduler keeps one "
                    "window of node usage"
                )


@dataclass
class _Choice:
    """A plugin of a profile being built: its class, score weight, the extension points it
    runs at when it was enabled at some only (None: all it serves, as at multiPoint), those
    disabled, and those it was enabled at by name."""

    cls: type
    weight: int
    only: set[str] | None = None
    disabled: set[str] = field(default_factory=set)
    requested: set[str] = field(default_factory=set)


def _named(names: Sequence[str], defaults: Mapping[str, type]) -> Sequence[str]:
    """The plugins a `disabled` list names; "*" stands for every default plugin."""
    return list(defaults) if "*" in names else names


def _point_names(points: set[str]) -> str:
    names = {core: name for name, core in EXTENSION_POINTS.items()}
    return ", ".join(sorted(names[p] for p in points))


def _plugin_class(name: str, in_tree: Mapping[str, type], path: str) -> type:
    if name in in_tree:
        return in_tree[name]
    if ":" not in name:
        raise ConfigError(
            f'{path}: Invalid value: "{name}": no such plugin (in-tree plugins: '
            f"{', '.join(in_tree)}; your own: module:Class)"
        )
    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # the user's module may fail in any way while importing
        raise ConfigError(
            f'{path}: Invalid value: "{name}": cannot import {module_name}: {type(e).__name__}: {e}'
        ) from None
    cls = getattr(module, attr, None)
    if not inspect.isclass(cls):
        raise ConfigError(f'{path}: Invalid value: "{name}": {module_name} has no class {attr}')
    return cls


def _construct(cls: type, name: str, config: ProfileConfig, bind: Bind) -> Plugin:
    args = config.plugin_config.get(name, {})
    where = (
        f"{config.path}.pluginConfig[{list(config.plugin_config).index(name)}].args"
        if (name in config.plugin_config)
        else f"{config.path}.plugins"
    )
    try:
        plugin = _instantiate(cls, args, bind)
    except (ValueError, TypeError, KeyError) as e:
        message = str(e)
        if args and _FIELD_MESSAGE.match(message):
            raise ConfigError(f"{where}.{message}") from None
        raise ConfigError(f'{where}: Invalid value: "{name}": {message}') from None
    if not isinstance(getattr(plugin, "name", None), str):
        raise ConfigError(f'{where}: Invalid value: "{name}": a plugin needs a `name` string')
    return plugin


def _instantiate(cls: type, args: Mapping[str, Any], bind: Bind) -> Plugin:
    """Call the plugin's constructor with what it asks for: `args` and/or `bind`."""
    parameters = inspect.signature(cls).parameters
    given: dict[str, Any] = {}
    if "args" in parameters:
        given["args"] = args
    elif args:
        raise ValueError("the plugin takes no arguments")
    if "bind" in parameters:
        given["bind"] = bind
    return cls(**given)
