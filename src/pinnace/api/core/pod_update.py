"""Pod update and status update validation (ValidatePodUpdate, ValidatePodStatusUpdate)."""

from __future__ import annotations

import copy
import ipaddress
import re
from collections.abc import Set
from functools import lru_cache
from typing import Any

from pinnace.api import field
from pinnace.api.core.pod_scheduling import validate_tolerations
from pinnace.api.core.pod_shape import as_dict, as_list, dict_items
from pinnace.api.core.pod_validation import MAX_INT32, SPEC, validate_pod_metadata_and_spec
from pinnace.api.field import FieldError, Path
from pinnace.api.meta import validate_object_meta_update
from pinnace.api.names import inclusive_range_error, is_dns1123_subdomain, is_qualified_name
from pinnace.api.validation import is_int, validate_immutable

UPDATABLE_POD_SPEC_FIELDS = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)
# Kubernetes appends a diff of the two specs to this message; Pinnace leaves it out.
SPEC_UPDATE_FORBIDDEN = "pod updates may not change fields other than " + ",".join(
    UPDATABLE_POD_SPEC_FIELDS
)
_SYSTEM_CONDITIONS = ("PodScheduled", "Ready", "Initialized")
STATUS = Path("status")
# Built once: every status write of every pod is validated against them.
_CONDITIONS = Path("metadata", "conditions")  # Kubernetes reports condition types here.
_NODE_NAME = STATUS.child("nodeName")
_NOMINATED_NODE_NAME = STATUS.child("nominatedNodeName")
_QOS_CLASS = STATUS.child("qosClass")
_STATUS_LISTS = {
    key: STATUS.child(key)
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
}
_IP_LISTS = {key: STATUS.child(key) for key in ("podIPs", "hostIPs")}


def validate_pod_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += validate_pod_metadata_and_spec(new)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    return errs + validate_pod_spec_update(as_dict(new.get("spec")), as_dict(old.get("spec")), SPEC)


def validate_pod_spec_update(
    new: dict[str, Any], old: dict[str, Any], path: Path
) -> list[FieldError]:
    """What may change in a pod's spec: images, activeDeadlineSeconds (only down), added
    tolerations, removed scheduling gates, and node constraints added while gated."""
    errs: list[FieldError] = []
    for list_name in ("containers", "initContainers"):
        new_ctrs, old_ctrs = as_list(new.get(list_name)), as_list(old.get(list_name))
        if len(new_ctrs) != len(old_ctrs):
            errs.append(
                field.forbidden(
                    path.child(list_name), "pod updates may not add or remove containers"
                )
            )
            return errs
        for i, ctr in dict_items(new_ctrs):
            image = ctr.get("image")
            if not image:
                errs.append(field.required(path.child(list_name).index(i).child("image")))
            elif isinstance(image, str) and image != image.strip():
                errs.append(
                    field.invalid(
                        path.child(list_name).index(i).child("image"),
                        image,
                        "must not have leading or trailing whitespace",
                    )
                )

    deadline_path = path.child("activeDeadlineSeconds")
    new_deadline, old_deadline = new.get("activeDeadlineSeconds"), old.get("activeDeadlineSeconds")
    if is_int(new_deadline):
        if not 0 <= new_deadline <= MAX_INT32:
            errs.append(
                field.invalid(deadline_path, new_deadline, inclusive_range_error(0, MAX_INT32))
            )
            return errs
        if is_int(old_deadline) and old_deadline < new_deadline:
            errs.append(
                field.invalid(
                    deadline_path, new_deadline, "must be less than or equal to previous value"
                )
            )
            return errs
    elif new_deadline is None and old_deadline is not None:
        errs.append(
            field.invalid(
                deadline_path, None, "must not update from a positive integer to nil value"
            )
        )

    errs += _validate_only_added_tolerations(
        new.get("tolerations"), old.get("tolerations"), path.child("tolerations")
    )
    errs += _validate_only_deleted_gates(
        new.get("schedulingGates"), old.get("schedulingGates"), path.child("schedulingGates")
    )
    if _semantic(new) == _semantic(old):
        return errs

    munged = copy.deepcopy(new)
    for list_name in ("containers", "initContainers"):
        for (_, ctr), (_, old_ctr) in zip(
            dict_items(munged.get(list_name)), dict_items(old.get(list_name)), strict=False
        ):
            _set(ctr, "image", old_ctr.get("image"))
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        _set(munged, key, old.get(key))
    old_grace = old.get("terminationGracePeriodSeconds")
    if is_int(old_grace) and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace

    if as_list(old.get("schedulingGates")):
        errs += _munge_gated_node_constraints(munged, old, path)

    if _semantic(munged) != _semantic(old):
        errs.append(field.forbidden(path, SPEC_UPDATE_FORBIDDEN))
    return errs


def _munge_gated_node_constraints(
    munged: dict[str, Any], old: dict[str, Any], path: Path
) -> list[FieldError]:
    """While a pod is gated, nodeSelector and required node affinity may only gain entries."""
    errs: list[FieldError] = []
    new_selector, old_selector = munged.get("nodeSelector"), old.get("nodeSelector")
    if _semantic(new_selector) != _semantic(old_selector):
        new_map = as_dict(new_selector)
        for key, value in as_dict(old_selector).items():
            if new_map.get(key) != value or key not in new_map:
                errs.append(
                    field.invalid(
                        path.child("nodeSelector"),
                        new_map,
                        "only additions to spec.nodeSelector are allowed "
                        "(no mutations or deletions)",
                    )
                )
                break
        _set(munged, "nodeSelector", old_selector)

    old_affinity = as_dict(old.get("affinity")).get("nodeAffinity")
    new_affinity = as_dict(munged.get("affinity")).get("nodeAffinity")
    if _semantic(old_affinity) != _semantic(new_affinity):
        errs += _validate_node_affinity_additions(
            as_dict(new_affinity), as_dict(old_affinity), path.child("affinity", "nodeAffinity")
        )
        affinity = munged.get("affinity")
        if not isinstance(affinity, dict):
            if old_affinity is not None:
                munged["affinity"] = {"nodeAffinity": old_affinity}
        elif (
            old.get("affinity") is None
            and not affinity.get("podAffinity")
            and not affinity.get("podAntiAffinity")
        ):
            del munged["affinity"]
        else:
            _set(affinity, "nodeAffinity", old_affinity)
    return errs


def _validate_node_affinity_additions(
    new: dict[str, Any], old: dict[str, Any], path: Path
) -> list[FieldError]:
    key = "requiredDuringSchedulingIgnoredDuringExecution"
    if old.get(key) is None:
        return []
    old_terms = as_list(as_dict(old[key]).get("nodeSelectorTerms"))
    new_terms = as_list(as_dict(new.get(key)).get("nodeSelectorTerms"))
    terms_path = path.child(key, "nodeSelectorTerms")
    if old_terms and len(old_terms) != len(new_terms):
        return [
            field.invalid(
                terms_path,
                new_terms,
                "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
            )
        ]
    errs = []
    for i, (new_term, old_term) in enumerate(zip(new_terms, old_terms, strict=True)):
        if not _only_additions(as_dict(new_term), as_dict(old_term)):
            errs.append(
                field.invalid(
                    terms_path.index(i),
                    new_term,
                    "only additions are allowed (no mutations or deletions)",
                )
            )
    return errs


def _only_additions(new_term: dict[str, Any], old_term: dict[str, Any]) -> bool:
    for key in ("matchExpressions", "matchFields"):
        old_items, new_items = as_list(old_term.get(key)), as_list(new_term.get(key))
        if len(old_items) > len(new_items) or _semantic(new_items[: len(old_items)]) != _semantic(
            old_items
        ):
            return False
    return True


def _validate_only_added_tolerations(new: Any, old: Any, path: Path) -> list[FieldError]:
    new_tols = [t for _, t in dict_items(new)]
    for old_tol in (t for _, t in dict_items(old)):
        wanted = _semantic({k: v for k, v in old_tol.items() if k != "tolerationSeconds"})
        if not any(
            _semantic({k: v for k, v in t.items() if k != "tolerationSeconds"}) == wanted
            for t in new_tols
        ):
            return [
                field.forbidden(
                    path, "existing toleration can not be modified except its tolerationSeconds"
                )
            ]
    return validate_tolerations(new, path)


def _validate_only_deleted_gates(new: Any, old: Any, path: Path) -> list[FieldError]:
    old_names = {g.get("name") for _, g in dict_items(old)}
    added: dict[Any, int] = {}
    for i, gate in dict_items(new):
        added[gate.get("name")] = i
    return [
        field.forbidden(
            path.index(i).child("name"),
            f"only deletion is allowed, but found new scheduling gate '{name}'",
        )
        for name, i in added.items()
        if name not in old_names
    ]


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = value


def _semantic(value: Any) -> Any:
    """A form for comparing specs as Kubernetes' semantic equality does: an absent field, a
    null, an empty list, "", 0 and false all read as unset."""
    if isinstance(value, dict):
        normal = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in normal.items() if v not in (None, [], "", False)}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def validate_pod_status_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    status, old_status = as_dict(new.get("status")), as_dict(old.get("status"))
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    for i, condition in dict_items(status.get("conditions")):
        ctype = condition.get("type")
        if ctype in _SYSTEM_CONDITIONS:
            continue
        ctype = ctype if isinstance(ctype, str) else ""
        errs += [
            field.invalid(_CONDITIONS.index(i).child("Type"), ctype, m)
            for m in is_qualified_name(ctype)
        ]
    if spec.get("nodeName") != old_spec.get("nodeName"):
        errs.append(field.forbidden(_NODE_NAME, "may not be changed directly"))
    nominated = status.get("nominatedNodeName")
    if (
        nominated
        and nominated != old_status.get("nominatedNodeName")
        and isinstance(nominated, str)
    ):
        errs += [
            field.invalid(_NOMINATED_NODE_NAME, nominated, m)
            for m in is_dns1123_subdomain(nominated)
        ]
    errs += validate_immutable(
        status.get("qosClass", ""), old_status.get("qosClass", ""), _QOS_CLASS
    )
    restart = old_spec.get("restartPolicy")
    errs += _validate_state_transitions(status, old_status, "containerStatuses", restart)
    sidecars = {
        c.get("name")
        for _, c in dict_items(old_spec.get("initContainers"))
        if c.get("restartPolicy") == "Always"
    }
    errs += _validate_state_transitions(
        status, old_status, "initContainerStatuses", restart, sidecars
    )
    errs += _validate_state_transitions(status, old_status, "ephemeralContainerStatuses", "Never")
    errs += _validate_ips(status, "podIPs")
    errs += _validate_ips(status, "hostIPs")
    host_ips = [ip for _, ip in dict_items(status.get("hostIPs"))]
    if host_ips and status.get("hostIP") != host_ips[0].get("ip"):
        errs.append(
            field.invalid(
                _IP_LISTS["hostIPs"].index(0).child("ip"),
                host_ips[0].get("ip"),
                "must be equal to `hostIP`",
            )
        )
    return errs


def _validate_state_transitions(
    status: dict[str, Any],
    old_status: dict[str, Any],
    key: str,
    restart: Any,
    restartable: Set[Any] = frozenset(),
) -> list[FieldError]:
    """A container that terminated for good may not come back to life in a status write."""
    if restart == "Always" or not old_status.get(key):
        return []
    errs = []
    new_statuses = [s for _, s in dict_items(status.get(key))]
    for i, old in dict_items(old_status.get(key)):
        terminated = as_dict(as_dict(old.get("state")).get("terminated"))
        if not terminated or old.get("name") in restartable:
            continue
        if terminated.get("exitCode", 0) != 0 and restart == "OnFailure":
            continue
        for new in new_statuses:
            if new.get("name") == old.get("name") and not as_dict(new.get("state")).get(
                "terminated"
            ):
                errs.append(
                    field.forbidden(
                        _STATUS_LISTS[key].index(i).child("state"),
                        "may not be transitioned to non-terminated state",
                    )
                )
    return errs


def _validate_ips(status: dict[str, Any], key: str) -> list[FieldError]:
    if not status.get(key):
        return []
    path = _IP_LISTS[key]
    entries = dict_items(status.get(key))
    errs: list[FieldError] = []
    families = []
    for i, entry in entries:
        ip = entry.get("ip")
        family = _ip_family(ip if isinstance(ip, str) else "")
        if family is not None:
            families.append(family)
        else:
            errs.append(
                field.invalid(
                    path.index(i),
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    if len(entries) > 1:
        if len(entries) > 2 or len(set(families)) != 2:
            errs.append(
                field.invalid(
                    path,
                    [e for _, e in entries],
                    "may specify no more than one IP for each IP family",
                )
            )
        seen: set[Any] = set()
        for i, entry in entries:
            if entry.get("ip") in seen:
                errs.append(field.duplicate(path.index(i), entry))
            seen.add(entry.get("ip"))
    return errs


_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"(?:{_OCTET}\.){{3}}{_OCTET}")
"""The dotted quads `ipaddress` takes (no leading zeros)."""


def _ip_family(text: str) -> int | None:
    """4 or 6; None for text that is no IP address. A dotted quad is told at once (each pod's
    IP is new to the memo below)."""
    return 4 if _IPV4.fullmatch(text) else _parsed_family(text)


@lru_cache(maxsize=4096)
def _parsed_family(text: str) -> int | None:
    """`_ip_family` by parsing. Remembered: every status write of a pod carries its IPs and
    its node's again."""
    try:
        return ipaddress.ip_address(text).version
    except ValueError:
        return None
