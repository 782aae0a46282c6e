"""The variants of a comparison (`pinnace simulate SCENARIO --compare VARIANTS.yaml`): a list
of named overrides of the Scenario file's `spec`, each making a scenario of its own.

    - name: least-allocated             # the first variant is the baseline
    - name: most-allocated
      override:
        cluster.schedulerConfig: most-allocated.yaml
        cluster.nodePools[0].count: 6
        cluster: {controllerManager: {nodeMonitorGracePeriod: 20s}}

An override's key is a path into `spec`, spelled as field errors spell paths: field names
joined by dots, a list item or a key holding a dot between brackets (`nodePools[0]`,
`labels[topology.kubernetes.io/zone]`). Its value is applied there as a JSON merge patch
(RFC 7386, as `kubectl patch --type merge`; pinnace.api.patch): a mapping is merged into the
mapping there key by key, null removes a field, and anything else replaces what was there.
Overrides are applied in the order written. Paths to files in an override are relative to the
scenario file, as the scenario's own are.

Every variant's scenario is checked as a whole before anything runs; a fault is reported with
the line of the override it comes from (`variants.yaml:7: variant "most-allocated":
spec.cluster.nodePools[0].count: Invalid value: -1: ...`), or with the scenario file's line when
the fault lies in what the variant left as it was.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from pinnace.api import field as fields
from pinnace.api.field import FieldError, Path
from pinnace.api.manifest import Document, ManifestError, load_document
from pinnace.api.patch import apply_json_merge_patch
from pinnace.sim.scenario import Scenario, ScenarioError, parse_scenario

_VARIANT_FIELDS = ("name", "override")
_STEP = re.compile(r"\.?([^.\[\]]+)|\[([^\[\]]+)\]")
_SEED = "seed"


class VariantError(ScenarioError):
    """A bad variants file, or a variant that makes a bad scenario; the message names the file,
    the line and the field."""


@dataclass(frozen=True)
class Variant:
    name: str
    override: dict[str, Any]
    """Path into the scenario's spec -> the value merged in there, as written."""


@dataclass(frozen=True)
class VariantsFile:
    variants: list[Variant]
    source: str
    document: Document | None = None
    """The file's lines, when read from text."""

    def line(self, path: str) -> str:
        """`source:line` of the field at `path` (only `source` without a document)."""
        return f"{self.source}:{self.document.line(path)}" if self.document else self.source


@dataclass(frozen=True)
class ScenarioFile:
    """A scenario file as written: what the variants override."""

    raw: dict[str, Any]
    source: str
    base: str
    """The directory its paths are relative to."""
    document: Document | None = None

    def line(self, path: str) -> str:
        return f"{self.source}:{self.document.line(path)}" if self.document else self.source


@dataclass(frozen=True)
class VariantScenario:
    """A variant's scenario: the file's content with the override applied, and what it reads as."""

    variant: Variant
    raw: dict[str, Any]
    scenario: Scenario


# --- reading -----------------------------------------------------------------------------------


def load_variants(path: str | os.PathLike[str]) -> VariantsFile:
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise VariantError(f"{source}: {e.strerror}") from None
    return parse_variants(text, source)


def parse_variants(data: str | Sequence[Any], source: str = "<list>") -> VariantsFile:
    """The variants `data` holds: YAML text, or the list read from it (or of `Variant`s)."""
    document: Document | None = None
    if isinstance(data, str):
        try:
            document = load_document(data, source)
        except ManifestError as e:
            raise VariantError(str(e)) from None
        data = document.value
    found = VariantsFile([], source, document)
    try:
        variants = _variants(data)
    except ScenarioError as e:
        raise VariantError(f"{found.line(e.field)}: {e}", e.field) from None
    return VariantsFile(variants, source, document)


def _variants(raw: Any) -> list[Variant]:
    root = Path()
    if not isinstance(raw, list):
        _fail(fields.type_invalid(root, raw, "must be a list of variants: {name, override}"))
    if not raw:
        _fail(fields.required(root, "at least one variant (the first is the baseline)"))
    variants: list[Variant] = []
    names: set[str] = set()
    for i, item in enumerate(raw):
        path = root.index(i)
        variant = item if isinstance(item, Variant) else _variant(item, path)
        if variant.name in names:
            _fail(fields.duplicate(path.child("name"), variant.name))
        names.add(variant.name)
        for key in variant.override:
            _target(key, path.child("override").key(key))
        variants.append(variant)
    return variants


def _variant(raw: Any, path: Path) -> Variant:
    if not isinstance(raw, dict):
        _fail(fields.type_invalid(path, raw, "must be of type object"))
    for key in raw:
        if key not in _VARIANT_FIELDS:
            raise ScenarioError(f'{path}: unknown field "{key}"', str(path.child(key)))
    name = raw.get("name")
    if name is None or name == "":
        _fail(fields.required(path.child("name")))
    if not isinstance(name, str):
        _fail(fields.type_invalid(path.child("name"), name, "must be of type string"))
    override = raw.get("override")
    if override is None:
        override = {}
    if not isinstance(override, dict):
        _fail(fields.type_invalid(path.child("override"), override, "must be of type object"))
    return Variant(name, override)


def _target(key: str, path: Path) -> tuple[str, ...]:
    """The steps of an override's key: `cluster.nodePools[0]` -> (cluster, nodePools, 0)."""
    steps = split(key)
    if steps is None:
        detail = "must be a path into the scenario's spec, such as cluster.nodePools[0].count"
        _fail(fields.invalid(path, key, detail))
    if steps[0] == _SEED:
        _fail(fields.forbidden(path, "the seeds are the comparison's (--seeds, --seed-list)"))
    return steps


def split(path: str) -> tuple[str, ...] | None:
    """The steps of a field path (`a.b[0].c[d.e]` -> a, b, 0, c, d.e); None if malformed."""
    steps: list[str] = []
    at = 0
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None or (at == 0 and path[0] == ".") or (at > 0 and match[0][0] not in ".["):
            return None
        steps.append(match[1] if match[1] is not None else match[2])
        at = match.end()
    return tuple(steps) or None


def _fail(error: FieldError) -> NoReturn:
    raise ScenarioError(str(error), error.field)


# --- making the variants' scenarios ------------------------------------------------------------


def read_scenario(scenario: str | os.PathLike[str] | Mapping[str, Any]) -> ScenarioFile:
    """A scenario file as written (its lines kept), or a mapping read from one; the file is
    checked as it stands first, so that its own faults are reported as `pinnace simulate`
    reports them."""
    if isinstance(scenario, Mapping):
        found = ScenarioFile(copy.deepcopy(dict(scenario)), "<dict>", "")
        parse_scenario(copy.deepcopy(found.raw), found.source, found.base)
        return found
    source = os.fspath(scenario)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ScenarioError(f"{source}: {e.strerror}") from None
    base = os.path.dirname(source)
    parse_scenario(text, source, base)
    document = load_document(text, source)
    return ScenarioFile(document.value, source, base, document)


def variant_scenarios(scenario: ScenarioFile, variants: VariantsFile) -> list[VariantScenario]:
    """Each variant's scenario, checked; a `VariantError` for the first that does not hold."""
    return [_scenario(scenario, variants, i) for i in range(len(variants.variants))]


def _scenario(scenario: ScenarioFile, variants: VariantsFile, index: int) -> VariantScenario:
    variant = variants.variants[index]
    at = Path().index(index).child("override")
    raw = copy.deepcopy(scenario.raw)
    spec = raw["spec"]
    for key, value in variant.override.items():
        try:
            _apply(spec, _target(key, at.key(key)), value, at.key(key))
        except ScenarioError as e:
            where = variants.line(e.field)
            raise VariantError(f'{where}: variant "{variant.name}": {e}', e.field) from None
    try:
        parsed = parse_scenario(copy.deepcopy(raw), scenario.source, scenario.base)
    except ScenarioError as e:
        field = e.field
        reason = str(e).removeprefix(f"{scenario.source}: ")
        inside = _in_override(variant, field)
        if inside is not None:
            where = variants.line(str(at) + inside)
            raise VariantError(f'{where}: variant "{variant.name}": {reason}', field) from None
        where = scenario.line(field)
        raise VariantError(f'{where}: with variant "{variant.name}": {reason}', field) from None
    return VariantScenario(variant, raw, parsed)


def _apply(spec: dict[str, Any], steps: tuple[str, ...], value: Any, path: Path) -> None:
    """Merge `value` in at `steps` below `spec`, making the mappings on the way if missing."""
    parent: Any = spec
    for depth, step in enumerate(steps):
        last = depth == len(steps) - 1
        if isinstance(parent, dict):
            if last:
                merged = apply_json_merge_patch(parent, {step: copy.deepcopy(value)})
                parent.clear()
                parent.update(merged)
                return
            if parent.get(step) is None:
                parent[step] = {}
            parent = parent[step]
        elif isinstance(parent, list):
            if not step.isdigit() or int(step) >= len(parent):
                count = f"{len(parent)} item" + ("" if len(parent) == 1 else "s")
                detail = f"{_spelled(steps[:depth])} has {count}: no item {step}"
                _fail(fields.invalid(path, value, detail))
            if last:
                if value is None:
                    _fail(fields.invalid(path, value, "null cannot remove a list's item"))
                item = {"item": parent[int(step)]}
                parent[int(step)] = apply_json_merge_patch(item, {"item": value})["item"]
                return
            parent = parent[int(step)]
        else:
            detail = f"{_spelled(steps[:depth])} is {_json_type(parent)}, not an object or a list"
            _fail(fields.invalid(path, value, detail))


def _in_override(variant: Variant, field: str) -> str | None:
    """Where in the variant's overrides the scenario's field `field` (`spec.a.b[0]`) was set,
    as a path below `override` (`.a.b[0]`, as the file's lines are noted): in the last
    override whose value holds the field, or replaced what held it; None if the field is the
    scenario's own."""
    steps = split(field)
    if not steps or steps[0] != "spec":
        return None
    steps = steps[1:]
    for key, value in reversed(variant.override.items()):
        target = split(key) or ()
        if steps[: len(target)] != target:
            continue
        inside = f".{key}"
        for step in steps[len(target) :]:
            if isinstance(value, dict) and step in value:
                value, inside = value[step], f"{inside}.{step}"
            elif isinstance(value, list) and step.isdigit() and int(step) < len(value):
                value, inside = value[int(step)], f"{inside}[{step}]"
            elif isinstance(value, dict):
                break  # below a merged mapping: a field the override did not set
            else:
                return inside
        else:
            return inside
    return None


def _spelled(steps: Sequence[str]) -> str:
    out = ""
    for step in steps:
        out += f"[{step}]" if step.isdigit() or "." in step else (f".{step}" if out else step)
    return out or "spec"


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number" if isinstance(value, int | float) else "null"
