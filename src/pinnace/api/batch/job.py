"""Job (batch/v1): defaulting, the registry strategy and validation as Kubernetes v1.32.

Unless `spec.manualSelector` is true, the server picks the selector: it labels the pod
template with the Job's uid and name (both the `batch.kubernetes.io/` labels and the legacy
unprefixed ones) and selects on the prefixed uid label, so a Job never adopts other pods.
"""

from __future__ import annotations

import re
from typing import Any

from pinnace.api import field
from pinnace.api.apps import (
    SPEC,
    Object,
    as_label_selector,
    bump_generation,
    changed,
    default_template,
    ensure_spec,
    go_label_selector,
    go_string_map,
    reset_for_create,
    set_default,
    spec_changed,
    status_of,
    template_labels,
    validate_nonnegative_fields,
    validate_selector,
    validate_selector_matches_template,
)
from pinnace.api.batch.job_status import validate_job_status
from pinnace.api.batch.pod_failure_policy import (
    default_pod_failure_policy,
    go_pod_failure_policy,
    valid_values,
    validate_pod_failure_policy,
)
from pinnace.api.batch.success_policy import go_success_policy, validate_success_policy
from pinnace.api.core.pod import validate_pod_template_spec
from pinnace.api.core.pod_resize import template_dropper
from pinnace.api.core.pod_shape import as_dict, child_dict
from pinnace.api.core.pod_warnings import template_warnings
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_dns1123_label, is_dns1123_subdomain, regex_error
from pinnace.api.strategy import keep_old, keep_spec
from pinnace.api.validation import (
    FIELD_IMMUTABLE_ERROR_MSG,
    GoValue,
    is_int,
    object_field,
)

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
NON_INDEXED = "NonIndexed"
INDEXED = "Indexed"
COMPLETION_MODES = (NON_INDEXED, INDEXED)
DEFAULT_BACKOFF_LIMIT = 6
BACKOFF_LIMIT_WITH_PER_INDEX = 2**31 - 1
FAILED = "Failed"
TERMINATING_OR_FAILED = "TerminatingOrFailed"
POD_REPLACEMENT_POLICIES = (FAILED, TERMINATING_OR_FAILED)
RESTART_POLICIES = ("OnFailure", "Never")
MAX_PARALLELISM_FOR_INDEXED_JOB = 100_000
MAX_FAILED_INDEXES_FOR_INDEXED_JOB = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000
_PARALLELISM_SOFT_LIMIT = 10_000
MAX_MANAGED_BY_LENGTH = 63
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")
# JobStatus{} as batch/v1 serializes it: every field is omitempty.
EMPTY_STATUS: Object = {}
# Kubernetes prints the whole core.PodTemplateSpec struct (thousands of characters) here.
_TEMPLATE_SHOWN = GoValue("core.PodTemplateSpec{...}")
_IMMUTABLE_SPEC_FIELDS = (
    "completionMode",
    "podFailurePolicy",
    "backoffLimitPerIndex",
    "managedBy",
    "successPolicy",
)


def default_job(job: Any) -> None:
    spec = ensure_spec(job)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    set_default(spec, "parallelism", 1)
    per_index = spec.get("backoffLimitPerIndex") is not None
    set_default(
        spec, "backoffLimit", BACKOFF_LIMIT_WITH_PER_INDEX if per_index else DEFAULT_BACKOFF_LIMIT
    )
    labels = template_labels(spec.get("template"))
    meta = child_dict(job, "metadata")
    if meta is not None and labels and not meta.get("labels"):
        meta["labels"] = dict(labels)
    set_default(spec, "completionMode", NON_INDEXED)
    set_default(spec, "suspend", False)
    policy = spec.get("podFailurePolicy")
    default_pod_failure_policy(policy)
    set_default(
        spec, "podReplacementPolicy", FAILED if policy is not None else TERMINATING_OR_FAILED
    )
    default_template(spec)


def _manual_selector(job: Object) -> bool:
    return as_dict(job.get("spec")).get("manualSelector") is True


def _generate_selector(job: Object) -> None:
    """Label the template with the Job's identity (keeping labels the user set, which
    validation then judges) and select on the uid."""
    spec = ensure_spec(job)
    meta = as_dict(job.get("metadata"))
    template = child_dict(spec, "template") if spec is not None else None
    if spec is None or template is None:
        return
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    if not isinstance(template["metadata"].get("labels"), dict):
        template["metadata"]["labels"] = {}
    labels = template["metadata"]["labels"]
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    for key, value in (
        (LEGACY_JOB_NAME_LABEL, name),
        (JOB_NAME_LABEL, name),
        (LEGACY_CONTROLLER_UID_LABEL, uid),
        (CONTROLLER_UID_LABEL, uid),
    ):
        labels.setdefault(key, value)
    if not isinstance(spec.get("selector"), dict):
        spec["selector"] = {}
    if not isinstance(spec["selector"].get("matchLabels"), dict):
        spec["selector"]["matchLabels"] = {}
    spec["selector"]["matchLabels"].setdefault(CONTROLLER_UID_LABEL, uid)


def prepare_job_for_create(job: Object) -> None:
    if not _manual_selector(job):
        _generate_selector(job)
    reset_for_create(job, EMPTY_STATUS)


def prepare_job_for_update(new: Object, old: Object) -> None:
    keep_old(new, old, "status")
    if spec_changed(new, old):
        bump_generation(new, old)


# --- validation --------------------------------------------------------------------------------


def _validate_has_label(labels: dict[str, Any], key: str, expected: str) -> list[FieldError]:
    """ValidateHasLabel on the pod template."""
    path = SPEC.child("template", "metadata", "labels").key(key)
    if key not in labels:
        return [field.required(path, f"must be '{expected}'")]
    if labels[key] != expected:
        return [field.invalid(path, go_string_map(labels), f"must be '{expected}'")]
    return []


def _validate_generated_selector(job: Object, prefixed_labels: bool) -> list[FieldError]:
    """ValidateGeneratedSelector: the template carries the Job's identity labels and the
    selector selects them."""
    spec = as_dict(job.get("spec"))
    if _manual_selector(job) or spec.get("selector") is None:
        return []
    meta = as_dict(job.get("metadata"))
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    errs: list[FieldError] = []
    if not uid:
        errs.append(field.required(Path("metadata", "uid")))
    labels = as_dict(template_labels(spec.get("template")))
    uid_label = CONTROLLER_UID_LABEL if prefixed_labels else LEGACY_CONTROLLER_UID_LABEL
    name_label = JOB_NAME_LABEL if prefixed_labels else LEGACY_JOB_NAME_LABEL
    errs += _validate_has_label(labels, uid_label, uid)
    errs += _validate_has_label(labels, name_label, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if prefixed_labels:
        expected |= {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    selector = as_label_selector(spec["selector"])
    if selector is not None and not selector.matches(expected):
        shown = go_label_selector(spec["selector"])
        errs.append(field.invalid(SPEC.child("selector"), shown, "`selector` not auto-generated"))
    return errs


def _validate_indexed(spec: Object, path: Path) -> list[FieldError]:
    """The rules tying completionMode to completions, parallelism and per-index backoff."""
    mode = spec.get("completionMode")
    errs: list[FieldError] = []
    if mode is not None and mode not in COMPLETION_MODES:
        errs.append(field.not_supported(path.child("completionMode"), mode, COMPLETION_MODES))
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    max_failed = spec.get("maxFailedIndexes")
    if mode == INDEXED:
        if completions is None:
            errs.append(
                field.required(path.child("completions"), f"when completion mode is {INDEXED}")
            )
        if is_int(parallelism) and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
            limit = f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB}"
            errs.append(
                field.invalid(
                    path.child("parallelism"),
                    parallelism,
                    f"{limit} when completion mode is {INDEXED}",
                )
            )
        if is_int(completions) and is_int(max_failed) and max_failed > completions:
            errs.append(
                field.invalid(
                    path.child("maxFailedIndexes"),
                    max_failed,
                    "must be less than or equal to completions",
                )
            )
        if is_int(max_failed) and max_failed > MAX_FAILED_INDEXES_FOR_INDEXED_JOB:
            limit = f"must be less than or equal to {MAX_FAILED_INDEXES_FOR_INDEXED_JOB}"
            errs.append(field.invalid(path.child("maxFailedIndexes"), max_failed, limit))
        if (
            is_int(completions)
            and completions > _COMPLETIONS_SOFT_LIMIT
            and spec.get("backoffLimitPerIndex") is not None
        ):
            errs += _validate_many_completions_per_index(spec, path)
    elif mode in (None, NON_INDEXED):
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                errs.append(
                    field.invalid(path.child(name), spec[name], "requires indexed completion mode")
                )
    return errs


def _validate_many_completions_per_index(spec: Object, path: Path) -> list[FieldError]:
    """Above 10^5 completions with a backoff limit per index, the failed indexes must stay
    trackable: maxFailedIndexes is required, and it and parallelism are capped at 10^4."""
    parallelism, max_failed = spec.get("parallelism"), spec.get("maxFailedIndexes")
    errs: list[FieldError] = []
    if max_failed is None:
        detail = f"must be specified when completions is above {_COMPLETIONS_SOFT_LIMIT}"
        errs.append(field.required(path.child("maxFailedIndexes"), detail))
    limit = (
        f"must be less than or equal to {_PARALLELISM_SOFT_LIMIT} when completions are above "
        f"{_COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
    )
    for name, value in (("parallelism", parallelism), ("maxFailedIndexes", max_failed)):
        if is_int(value) and value > _PARALLELISM_SOFT_LIMIT:
            errs.append(field.invalid(path.child(name), value, limit))
    return errs


def _validate_pod_replacement_policy(spec: Object, path: Path) -> list[FieldError]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    allowed = (FAILED,) if spec.get("podFailurePolicy") is not None else POD_REPLACEMENT_POLICIES
    if policy in allowed:
        return []
    return [field.not_supported(path.child("podReplacementPolicy"), policy, allowed)]


def _validate_managed_by(value: Any, spec_path: Path) -> list[FieldError]:
    """The controller in charge, as a domain-prefixed path like `kueue.x-k8s.io/multikueue`."""
    path = spec_path.child("managedBy")
    if not isinstance(value, str) or not value:
        return [field.required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        detail = 'must be a domain-prefixed path (such as "acme.io/foo")'
        return [field.invalid(path, value, detail)]
    errs = [field.invalid(path, host, m) for m in is_dns1123_subdomain(host)]
    if not _HTTP_PATH.fullmatch(rest):
        errs.append(field.invalid(path, rest, regex_error("Invalid path", _HTTP_PATH.pattern)))
    if len(value) > MAX_MANAGED_BY_LENGTH:
        errs.append(field.too_long(path, value, MAX_MANAGED_BY_LENGTH))
    return errs


def _validate_template(spec: Object, path: Path) -> list[FieldError]:
    """The pod template, whose pods must not restart forever."""
    template_path = path.child("template")
    errs = validate_pod_template_spec(spec.get("template"), template_path)
    restart = as_dict(as_dict(spec.get("template")).get("spec")).get("restartPolicy") or ""
    path = template_path.child("spec", "restartPolicy")
    if restart in ("", "Always"):
        errs.append(field.required(path, valid_values(RESTART_POLICIES)))
    elif restart not in RESTART_POLICIES:
        errs.append(field.not_supported(path, restart, RESTART_POLICIES))
    elif spec.get("podFailurePolicy") is not None and restart != "Never":
        detail = 'only "Never" is supported when podFailurePolicy is specified'
        errs.append(field.invalid(path, restart, detail))
    return errs


def validate_job_spec(spec: Object, path: Path) -> list[FieldError]:
    """validateJobSpec: a Job's spec, or a CronJob's job template's, but for the selector."""
    errs = validate_nonnegative_fields(
        spec,
        path,
        (
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
            "backoffLimitPerIndex",
            "maxFailedIndexes",
        ),
    )
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        errs.append(
            field.required(path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified")
        )
    if spec.get("managedBy") is not None:
        errs += _validate_managed_by(spec["managedBy"], path)
    errs += _validate_indexed(spec, path)
    if spec.get("podFailurePolicy") is not None:
        errs += validate_pod_failure_policy(spec, path.child("podFailurePolicy"))
    if spec.get("successPolicy") is not None:
        errs += _validate_success_policy(spec, path)
    errs += _validate_pod_replacement_policy(spec, path)
    return errs + _validate_template(spec, path)


def _validate_success_policy(spec: Object, path: Path) -> list[FieldError]:
    """Only an Indexed Job may say which of its indexes make it a success."""
    policy_path = path.child("successPolicy")
    if (spec.get("completionMode") or NON_INDEXED) != INDEXED:
        shown = go_success_policy(spec["successPolicy"])
        return [field.invalid(policy_path, shown, "requires indexed completion mode")]
    return validate_success_policy(spec, policy_path)


def _validate_spec(job: Object) -> list[FieldError]:
    """ValidateJobSpec."""
    spec, errs = object_field(job.get("spec"), SPEC)
    errs += validate_job_spec(spec, SPEC)
    selector_path = SPEC.child("selector")
    if spec.get("selector") is None:
        errs.append(field.required(selector_path))
    else:
        errs += validate_selector(spec["selector"], selector_path)
    selector = as_label_selector(spec.get("selector"))
    if selector is not None:
        errs += validate_selector_matches_template(
            selector, spec.get("template"), SPEC.child("template")
        )
    return errs


def _validate_indexed_hostnames(job: Object) -> list[FieldError]:
    """An Indexed Job's pods are named `<job>-<index>`, which must be a DNS label."""
    spec = as_dict(job.get("spec"))
    completions = spec.get("completions")
    if spec.get("completionMode") != INDEXED or not is_int(completions) or completions <= 0:
        return []
    name = as_dict(job.get("metadata")).get("name")
    if not isinstance(name, str):
        return []
    hostname = f"{name}-{completions - 1}"
    if not is_dns1123_label(hostname):
        return []
    detail = f"will not able to create pod with invalid DNS label: {hostname}"
    return [field.invalid(Path("metadata", "name"), name, detail)]


def _validate_job(job: Any, prefixed_labels: bool) -> list[FieldError]:
    errs = validate_object_meta(job, namespaced=True)
    if not isinstance(job, dict):
        return errs
    errs += _validate_generated_selector(job, prefixed_labels)
    return errs + _validate_spec(job) + _validate_indexed_hostnames(job)


def validate_job(job: Any) -> list[FieldError]:
    return _validate_job(job, prefixed_labels=True)


# How kube-apiserver shows a changed policy: the internal struct, as `%#v` prints it.
_GO_SHOWN = {"podFailurePolicy": go_pod_failure_policy, "successPolicy": go_success_policy}


def _immutable(new: Object, old: Object, name: str) -> list[FieldError]:
    value = new.get(name)
    if not changed(value, old.get(name)):
        return []
    if value is not None and name in _GO_SHOWN:
        value = _GO_SHOWN[name](value)
    return [field.invalid(SPEC.child(name), value, FIELD_IMMUTABLE_ERROR_MSG)]


def _mutable_scheduling_directives(old: Object) -> bool:
    """A suspended Job that never started may still change where its pods go."""
    suspended = as_dict(old.get("spec")).get("suspend") is True
    return suspended and as_dict(old.get("status")).get("startTime") is None


def _template_for_comparison(template: Any, new_template: Any) -> Any:
    """The old template with the fields a suspended, unstarted Job may change taken from the
    new one: node affinity, node selector, tolerations, scheduling gates, labels and
    annotations."""
    old_template, new_template = as_dict(template), as_dict(new_template)
    result = {**old_template, "metadata": dict(as_dict(old_template.get("metadata")))}
    new_meta = as_dict(new_template.get("metadata"))
    for key in ("labels", "annotations"):
        result["metadata"].pop(key, None)
        if key in new_meta:
            result["metadata"][key] = new_meta[key]
    old_spec, new_spec = as_dict(old_template.get("spec")), as_dict(new_template.get("spec"))
    spec = dict(old_spec)
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        spec.pop(key, None)
        if key in new_spec:
            spec[key] = new_spec[key]
    spec.pop("affinity", None)
    affinity = {k: v for k, v in as_dict(old_spec.get("affinity")).items() if k != "nodeAffinity"}
    new_affinity = new_spec.get("affinity")
    if isinstance(new_affinity, dict) and "nodeAffinity" in new_affinity:
        affinity["nodeAffinity"] = new_affinity["nodeAffinity"]
    if affinity or (new_affinity is not None and old_spec.get("affinity") is not None):
        spec["affinity"] = affinity
    result["spec"] = spec
    return result


def _validate_template_update(
    new: Object, old: Object, mutable_scheduling: bool
) -> list[FieldError]:
    template, old_template = new.get("template"), old.get("template")
    if mutable_scheduling:
        old_template = _template_for_comparison(old_template, template)
    if not changed(template, old_template):
        return []
    return [field.invalid(SPEC.child("template"), _TEMPLATE_SHOWN, FIELD_IMMUTABLE_ERROR_MSG)]


def _validate_completions_update(new: Object, old: Object) -> list[FieldError]:
    """Completions are immutable, except that an Indexed Job may scale completions and
    parallelism together."""
    completions = new.get("completions")
    if not changed(completions, old.get("completions")):
        return []
    if new.get("completionMode") != INDEXED:
        return [field.invalid(SPEC.child("completions"), completions, FIELD_IMMUTABLE_ERROR_MSG)]
    if completions is None or completions == new.get("parallelism"):
        return []
    detail = "can only be modified in tandem with spec.parallelism"
    return [field.invalid(SPEC.child("completions"), completions, detail)]


def validate_job_update(new: Any, old: Any) -> list[FieldError]:
    """ValidateJob on the new object, then ValidateJobUpdate: the spec again and what may
    not change."""
    # A Job stored before the prefixed labels existed keeps passing without them.
    old_labels = as_dict(template_labels(as_dict(as_dict(old).get("spec")).get("template")))
    prefixed = JOB_NAME_LABEL in old_labels and CONTROLLER_UID_LABEL in old_labels
    errs = _validate_job(new, prefixed)
    errs += validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs += _validate_spec(new) + _validate_completions_update(spec, old_spec)
    if changed(spec.get("selector"), old_spec.get("selector")):
        shown = go_label_selector(spec.get("selector"))
        errs.append(field.invalid(SPEC.child("selector"), shown, FIELD_IMMUTABLE_ERROR_MSG))
    errs += _validate_template_update(spec, old_spec, _mutable_scheduling_directives(old))
    for name in _IMMUTABLE_SPEC_FIELDS:
        errs += _immutable(spec, old_spec, name)
    return errs


def validate_job_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    _, e = status_of(new)
    return errs + e + validate_job_status(new, old)


def job_spec_warnings(owner: Any, *path: str) -> list[str]:
    """pkg/api/job WarningsForJobSpec's own check, for the Job spec at `path` ("spec" unless
    given) in `owner`: an Indexed Job too big for its completed indexes to be tracked."""
    path = path or ("spec",)
    spec = as_dict(owner)
    for step in path:
        spec = as_dict(spec.get(step))
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    if (
        spec.get("completionMode") == INDEXED
        and isinstance(completions, int)
        and completions > _COMPLETIONS_SOFT_LIMIT
        and isinstance(parallelism, int)
        and parallelism > _PARALLELISM_SOFT_LIMIT
    ):
        return [
            f"{'.'.join(path)}: In Indexed Jobs with a number of completions higher "
            "than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to "
            "track completedIndexes when a big number of indexes fail"
        ]
    return []


JOB = Kind(
    group="batch",
    version="v1",
    kind="Job",
    plural="jobs",
    namespaced=True,
    model="V1Job",
    categories=("all",),
    subresources=("status",),
    default=default_job,
    orphans_by_default=True,
    prepare_for_create=prepare_job_for_create,
    prepare_for_update=prepare_job_for_update,
    prepare_for_status_update=keep_spec,
    validate=validate_job,
    validate_update=validate_job_update,
    validate_status_update=validate_job_status_update,
    drop_disabled=template_dropper("spec", "template"),
    **template_warnings("spec", "template", name=True, spec=job_spec_warnings),
)
