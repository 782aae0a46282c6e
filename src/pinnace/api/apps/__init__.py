"""The apps/v1 API group: what its workload kinds share, and the Scale subresource.

Deployments, ReplicaSets and DaemonSets check their selector, pod template and rollout knobs
the same way (pkg/apis/apps/validation); the batch and policy groups borrow the selector and
int-or-percent checks, as Kubernetes' own validation does. Bad values that Kubernetes hands
to a field error as Go structs are shown as Go's `%#v` shows them (`v1.LabelSelector{...}`,
`intstr.IntOrString{...}`, `map[string]string{...}`); where Go would print a pointer's
address inside a struct, Pinnace shows the value it points to (`&T{...}`), which is stable.

`scale_of` and `apply_scale` are the two halves of the `scale` subresource that deployments
and replicasets serve (autoscaling/v1 Scale).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Iterable
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod import default_pod_template, validate_pod_template_spec
from pinnace.api.core.pod_fields import well_formed_selector
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_update import _semantic as semantic_form
from pinnace.api.field import FieldError, Path
from pinnace.api.labels import (
    LabelSelector,
    SelectorError,
    selector_from_dict,
    validate_label_selector,
)
from pinnace.api.names import is_valid_percent
from pinnace.api.objects import Object
from pinnace.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    GoValue,
    go_slice,
    go_struct,
    is_int,
    object_field,
    validate_int_or_percent,
    validate_nonnegative,
)

SPEC = Path("spec")
STATUS = Path("status")
SELECTOR_MISMATCH = "`selector` does not match template `labels`"
GREATER_THAN_REPLICAS = "cannot be greater than status.replicas"

# --- Go renderings of bad values ---------------------------------------------------------------


def _quote(value: Any) -> str:
    return json.dumps(value if isinstance(value, str) else str(value), ensure_ascii=False)


def go_string_map(value: Any) -> GoValue:
    """A map[string]string as `%#v` shows it, keys sorted: `map[string]string{"a":"b"}`."""
    if not isinstance(value, dict):
        return GoValue("map[string]string(nil)")
    items = ", ".join(f"{_quote(k)}:{_quote(v)}" for k, v in sorted(value.items()))
    return GoValue(f"map[string]string{{{items}}}")


def go_nil_slice(element_type: str) -> GoValue:
    return GoValue(f"[]{element_type}(nil)")


def _go_strings(value: Any) -> GoValue:
    if not isinstance(value, list):
        return go_nil_slice("string")
    return go_slice("string", [str(v) for v in value])


def _go_requirement(expression: Any) -> str:
    expression = as_dict(expression)
    fields = [
        ("Key", str(expression.get("key") or "")),
        ("Operator", str(expression.get("operator") or "")),
        ("Values", _go_strings(expression.get("values"))),
    ]
    return go_struct("v1.LabelSelectorRequirement", fields).text


def go_label_selector(selector: Any) -> GoValue | None:
    """A metav1.LabelSelector as `%#v` shows it; None (shown as null) when absent."""
    if selector is None:
        return None
    selector = as_dict(selector)
    expressions = selector.get("matchExpressions")
    if isinstance(expressions, list):
        items = ", ".join(_go_requirement(e) for e in expressions)
        shown = GoValue(f"[]v1.LabelSelectorRequirement{{{items}}}")
    else:
        shown = go_nil_slice("v1.LabelSelectorRequirement")
    fields = [
        ("MatchLabels", go_string_map(selector.get("matchLabels"))),
        ("MatchExpressions", shown),
    ]
    return go_struct("v1.LabelSelector", fields)


def go_int_or_string(value: Any) -> GoValue:
    """An intstr.IntOrString as `%#v` shows it."""
    if isinstance(value, str):
        fields: list[tuple[str, Any]] = [("Type", GoValue("1")), ("IntVal", GoValue("0"))]
        return go_struct("intstr.IntOrString", [*fields, ("StrVal", value)])
    number = value if is_int(value) else 0
    fields = [("Type", GoValue("0")), ("IntVal", GoValue(str(number))), ("StrVal", "")]
    return go_struct("intstr.IntOrString", fields)


def go_pointer(type_name: str, value: GoValue | None) -> GoValue:
    """A pointer field inside a struct: `(*T)(nil)`, or `&T{...}` for the value it points to."""
    return GoValue(f"(*{type_name})(nil)") if value is None else GoValue(f"&{value.text}")


def go_rollout_strategy(strategy: Object, strategy_type: str, rolling_type: str) -> GoValue:
    """A Deployment's or DaemonSet's strategy struct (`Type` and a `RollingUpdate` pointer
    to `MaxUnavailable` and `MaxSurge`) as `%#v` shows it."""
    rolling, shown = strategy.get("rollingUpdate"), None
    if isinstance(rolling, dict):
        bounds = [
            ("MaxUnavailable", go_int_or_string(rolling.get("maxUnavailable", 0))),
            ("MaxSurge", go_int_or_string(rolling.get("maxSurge", 0))),
        ]
        shown = go_struct(rolling_type, bounds)
    fields = [
        ("Type", str(strategy.get("type") or "")),
        ("RollingUpdate", go_pointer(rolling_type, shown)),
    ]
    return go_struct(strategy_type, fields)


# --- int-or-percent fields --------------------------------------------------------------------

_ATOI = re.compile(r"[+-]?[0-9]+")


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and not is_valid_percent(value):
        return int(value[:-1])
    return None


def int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: the number of a percentage, else the IntOrString's IntValue()
    (a string that is not a number reads 0)."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if is_int(value):
        return int(value)
    if isinstance(value, str) and _ATOI.fullmatch(value):
        return int(value)
    return 0


def validate_positive_int_or_percent(value: Any, path: Path) -> list[FieldError]:
    """ValidatePositiveIntOrPercent: a non-negative integer or a percentage like "25%"."""
    errs = validate_int_or_percent(value, path)
    if isinstance(value, str):
        shown = go_int_or_string(value)
        errs = [dataclasses.replace(e, bad_value=shown) for e in errs]
    return errs


def is_not_more_than_100_percent(value: Any, path: Path) -> list[FieldError]:
    percent = _percent(value)
    if percent is None or percent <= 100:
        return []
    return [field.invalid(path, go_int_or_string(value), "must not be greater than 100%")]


# --- selectors and pod templates --------------------------------------------------------------


def validate_selector(selector: Any, path: Path) -> list[FieldError]:
    """metav1validation.ValidateLabelSelector, refusing invalid label values; absent is valid."""
    if selector is None:
        return []
    errs: list[FieldError] = []
    clean = well_formed_selector(selector, path, errs)
    return errs + validate_label_selector(clean, path)


def as_label_selector(selector: Any) -> LabelSelector | None:
    """metav1.LabelSelectorAsSelector: an absent selector selects nothing; None when the
    selector does not convert."""
    if selector is None:
        return LabelSelector.nothing()
    errs: list[FieldError] = []
    clean = well_formed_selector(selector, Path(), errs)
    if errs:
        return None
    try:
        return selector_from_dict(clean)
    except SelectorError:
        return None


def is_empty_selector(selector: Any) -> bool:
    selector = as_dict(selector)
    return not selector.get("matchLabels") and not selector.get("matchExpressions")


def validate_required_selector(spec: Object, path: Path, owner: str) -> list[FieldError]:
    """The selector a Deployment, ReplicaSet or StatefulSet must have: present, valid and
    not empty. (`owner` is the word Kubernetes uses: "deployment" for the first two,
    "statefulset" for the last.)"""
    selector = spec.get("selector")
    if selector is None:
        return [field.required(path)]
    errs = validate_selector(selector, path)
    if is_empty_selector(selector):
        errs.append(
            field.invalid(
                path, go_label_selector(selector), f"empty selector is invalid for {owner}"
            )
        )
    return errs


def template_labels(template: Any) -> Any:
    return as_dict(as_dict(template).get("metadata")).get("labels")


def validate_selector_matches_template(
    selector: LabelSelector, template: Any, path: Path
) -> list[FieldError]:
    """The pods a template makes must be selected: `path` is the template's."""
    labels = template_labels(template)
    strings = {k: v for k, v in as_dict(labels).items() if isinstance(v, str)}
    if selector.empty or selector.matches(strings):
        return []
    return [
        field.invalid(path.child("metadata", "labels"), go_string_map(labels), SELECTOR_MISMATCH)
    ]


def validate_always_restarting_template(template: Any, path: Path, owner: str) -> list[FieldError]:
    """A long-running workload's template: a valid pod template whose pods always restart
    and run without a deadline."""
    return validate_pod_template_spec(template, path) + validate_restarting_pods(
        template, path, owner
    )


def validate_restarting_pods(template: Any, path: Path, owner: str) -> list[FieldError]:
    """The pod policy every long-running workload's template must have: pods always restart
    and run without a deadline."""
    errs: list[FieldError] = []
    spec = as_dict(as_dict(template).get("spec"))
    restart = spec.get("restartPolicy") or ""
    if restart != "Always":
        errs.append(field.not_supported(path.child("spec", "restartPolicy"), restart, ["Always"]))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(
            field.forbidden(
                path.child("spec", "activeDeadlineSeconds"),
                f"activeDeadlineSeconds in {owner} is not Supported",
            )
        )
    return errs


def validate_selected_template(spec: Object, path: Path) -> list[FieldError]:
    """A Deployment's or ReplicaSet's template against its selector
    (ValidatePodTemplateSpecForReplicaSet), or the selector's conversion error."""
    selector = as_label_selector(spec.get("selector"))
    if selector is None:
        shown = go_label_selector(spec.get("selector"))
        return [field.invalid(path.child("selector"), shown, "invalid label selector")]
    template, template_path = spec.get("template"), path.child("template")
    errs = validate_selector_matches_template(selector, template, template_path)
    return errs + validate_always_restarting_template(template, template_path, "ReplicaSet")


def validate_selector_unchanged(new: Object, old: Object) -> list[FieldError]:
    """apps/v1 and batch/v1 refuse to change a selector once set."""
    new_selector = as_dict(new.get("spec")).get("selector")
    old_selector = as_dict(old.get("spec")).get("selector")
    if semantic_form(new_selector) == semantic_form(old_selector):
        return []
    shown = go_label_selector(new_selector)
    return [field.invalid(SPEC.child("selector"), shown, FIELD_IMMUTABLE_ERROR_MSG)]


# --- plain fields -----------------------------------------------------------------------------


def validate_nonnegative_fields(obj: Object, path: Path, names: Iterable[str]) -> list[FieldError]:
    """Optional integer fields that may not be negative (absent is fine)."""
    errs: list[FieldError] = []
    for name in names:
        if obj.get(name) is not None:
            errs += validate_nonnegative(obj[name], path.child(name))
    return errs


def counter(obj: Object, name: str) -> int:
    """An int32 field read as Go reads it: absent (or badly typed) is 0."""
    value = obj.get(name)
    return int(value) if is_int(value) else 0


def validate_not_above(
    status: Object, path: Path, checks: Iterable[tuple[str, str, str]]
) -> list[FieldError]:
    """(field, bound, message): each counter may not exceed the bound counter."""
    return [
        field.invalid(path.child(name), counter(status, name), message)
        for name, bound, message in checks
        if counter(status, name) > counter(status, bound)
    ]


def status_of(obj: Object) -> tuple[Object, list[FieldError]]:
    return object_field(obj.get("status"), STATUS)


def validate_collision_count(new: Object, old: Object) -> list[FieldError]:
    """status.collisionCount may only grow (and not disappear once set)."""
    value = as_dict(new.get("status")).get("collisionCount")
    old_value = as_dict(old.get("status")).get("collisionCount")
    if old_value is None or not is_int(old_value):
        return []
    if value is None or (is_int(value) and value < old_value):
        shown = value if value is not None else 0
        return [field.invalid(STATUS.child("collisionCount"), shown, "cannot be decremented")]
    return []


# --- defaulting and the registry strategies ---------------------------------------------------


def ensure_spec(obj: Any) -> Object | None:
    """The object's spec, made `{}` when absent (Go's zero value is defaulted as well)."""
    if not isinstance(obj, dict):
        return None
    if obj.get("spec") is None:
        obj["spec"] = {}
    return child_dict(obj, "spec")


def default_template(spec: Object) -> None:
    """Default the pod template inside a workload's spec, an absent one included."""
    if spec.get("template") is None:
        spec["template"] = {}
    template = child_dict(spec, "template")
    if template is None:
        return
    if template.get("spec") is None:
        template["spec"] = {}
    default_pod_template(template)


def set_default(obj: Object, key: str, value: Any) -> None:
    if obj.get(key) is None:
        obj[key] = value


def reset_for_create(obj: Object, empty_status: Object) -> None:
    """A new object starts with the status Kubernetes' empty struct serializes to, at
    generation 1."""
    obj["status"] = copy.deepcopy(empty_status)
    start_generation(obj)


def start_generation(obj: Object) -> None:
    """The PrepareForCreate of a kind without a status: a new object is at generation 1."""
    meta = child_dict(obj, "metadata")
    if meta is not None:
        meta["generation"] = 1


def changed(new: Any, old: Any) -> bool:
    """Semantic inequality, as apiequality.Semantic.DeepEqual sees JSON."""
    return semantic_form(new) != semantic_form(old)


def spec_changed(new: Object, old: Object) -> bool:
    return changed(new.get("spec"), as_dict(old).get("spec"))


def bump_generation(new: Object, old: Object) -> None:
    meta = child_dict(new, "metadata")
    if meta is None:
        return
    old_generation = as_dict(as_dict(old).get("metadata")).get("generation")
    meta["generation"] = (old_generation if is_int(old_generation) else 0) + 1


def bump_generation_on_spec_change(new: Object, old: Object) -> None:
    """The PrepareForUpdate of a kind without a status: any change to the spec increments
    the generation."""
    if spec_changed(new, old):
        bump_generation(new, old)


def keep_labels(new: Object, old: Object) -> None:
    """metadata.labels are the main endpoint's business (a status write keeps them)."""
    meta = child_dict(new, "metadata")
    if meta is None:
        return
    old_meta = as_dict(as_dict(old).get("metadata"))
    if "labels" in old_meta:
        meta["labels"] = copy.deepcopy(old_meta["labels"])
    else:
        meta.pop("labels", None)


# --- the scale subresource --------------------------------------------------------------------

SCALE_META_FIELDS = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def scale_of(obj: Object, selector: LabelSelector | None = None) -> Object:
    """The autoscaling/v1 Scale a Deployment or ReplicaSet shows at its `scale` subresource;
    `selector` for a kind whose selector is not a LabelSelector (a ReplicationController's)."""
    meta = as_dict(obj.get("metadata"))
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    if selector is None:
        selector = as_label_selector(spec.get("selector"))
    replicas = counter(spec, "replicas")
    scale_status: Object = {"replicas": counter(status, "replicas")}
    if selector is not None and str(selector):
        scale_status["selector"] = str(selector)
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {k: copy.deepcopy(meta[k]) for k in SCALE_META_FIELDS if k in meta},
        "spec": {"replicas": replicas} if replicas else {},
        "status": scale_status,
    }


def apply_scale(obj: Object, scale: Any) -> list[FieldError]:
    """Set the replica count a Scale asks for on `obj` (in place), after ValidateScale's
    check of spec.replicas; an absent count means 0, as Go's zero value does. On errors
    `obj` is left as it was."""
    if not isinstance(scale, dict):
        return [field.type_invalid(Path(), scale, "must be of type object")]
    scale_spec, errs = object_field(scale.get("spec"), SPEC)
    replicas = scale_spec.get("replicas")
    replicas = 0 if replicas is None else replicas
    errs += validate_nonnegative(replicas, SPEC.child("replicas"))
    if errs:
        return errs
    spec = ensure_spec(obj)
    if spec is None:
        return [field.type_invalid(SPEC, obj.get("spec"), "must be of type object")]
    spec["replicas"] = replicas
    return []
