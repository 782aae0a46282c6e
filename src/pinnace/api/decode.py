"""Decoding a request body into a kind, as kube-apiserver's create and update handlers do.

A body may leave out apiVersion and kind (the URL supplies them); a different kind or
version is refused. The result is a new object with unknown fields dropped (reported as
warnings, or refused when decoding is strict) and quantities and times in canonical form.
Every failure is a 400 worded as kube-apiserver words it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from pinnace.api import status
from pinnace.api.goquote import quote
from pinnace.api.kind import Kind
from pinnace.api.objects import without_empty_metadata
from pinnace.api.schema import SchemaError, json_type, normalize, normalize_object_meta
from pinnace.api.status import StatusError


class Repeats(NamedTuple):
    """What kube-apiserver's strict decoder finds repeated in a body's text, which it reports
    (or refuses when strict) with the unknown fields."""

    fields: Sequence[str] = ()
    """The paths of the fields a JSON text repeats."""
    yaml: str = ""
    """The YAML converter's error for the keys a YAML text repeats (YAMLToJSONStrict's),
    which the decoder reports first."""


NO_REPEATS = Repeats()


class Undecodable(StatusError):
    """A body that does not fit the kind's Go types: create's and update's 400, which a
    patch handler words its own way from `cause`."""

    def __init__(self, cause: SchemaError, message: str) -> None:
        super().__init__(400, "BadRequest", message)
        self.cause = cause


class Decoded(NamedTuple):  # one per write: a tuple is made at a fraction of a dataclass' cost
    obj: dict[str, Any]
    warnings: list[str]
    """One `unknown field "<path>"` per dropped field (the path quoted as Go quotes it), for
    the Warning header."""


def decode(
    obj: Any,
    kind: Kind,
    *,
    strict: bool = False,
    json_text: bool = False,
    basis: dict[str, Any] | None = None,
    share: bool = False,
    repeats: Repeats = NO_REPEATS,
) -> Decoded:
    """`json_text`: `obj` was parsed from JSON text; `basis`: the stored object `obj` changes;
    `share`: what `obj` holds of `basis` itself may stay shared (see `normalize`);
    `repeats`: what the text repeats."""
    body_kind, body_api_version = _type_meta(obj, kind)
    group, _, version = body_api_version.rpartition("/")
    if body_kind != kind.kind or body_api_version != kind.api_version:
        raise _mismatch(body_kind, group, version, kind)
    if kind.prune is not None:
        if not isinstance(obj, dict):
            raise _cannot_handle(body_kind, version, kind, "expected an object")
        decoded_obj = copy.deepcopy(obj)
        unknown_fields = []
        if "metadata" in decoded_obj:
            try:
                meta = normalize_object_meta(decoded_obj["metadata"], json_text=json_text)
            except SchemaError as e:
                raise _cannot_handle(body_kind, version, kind, str(e)) from None
            decoded_obj["metadata"], unknown_fields = meta.obj, meta.unknown_fields
        unknown_fields += kind.prune(decoded_obj)
    else:
        try:
            normalized = normalize(kind, obj, json_text=json_text, basis=basis, share=share)
        except SchemaError as e:
            raise _undecodable(body_kind, version, kind, e) from None
        decoded_obj, unknown_fields = normalized.obj, normalized.unknown_fields
    warnings = [f"unknown field {quote(path)}" for path in unknown_fields]
    if repeats.fields:
        repeated = _decoded_repeats(repeats.fields, unknown_fields, kind)
        warnings = [f"duplicate field {quote(path)}" for path in repeated] + warnings
    if repeats.yaml:
        warnings.insert(0, repeats.yaml)
    if strict and warnings:
        raise _cannot_handle(
            body_kind, version, kind, "strict decoding error: " + ", ".join(warnings)
        )
    return Decoded(_in_wire_order(without_empty_metadata(decoded_obj), kind), warnings)


def as_decoded(obj: dict[str, Any], kind: Kind) -> Decoded:
    """What `decode` gives for a body already in its form (`WriteOptions.decoded`: canonical
    times and quantities, no unknown field, no zero Go would leave out), without walking it: a
    new object in wire order, of the body's parts only the metadata copied (the write fills
    it in); the rest is handed over. A different kind or version is refused as by `decode`."""
    body_kind, body_api_version = _type_meta(obj, kind)
    if body_kind != kind.kind or body_api_version != kind.api_version:
        group, _, version = body_api_version.rpartition("/")
        raise _mismatch(body_kind, group, version, kind)
    # A built-in kind's wire order is a new dict already; a custom one's sets its type first.
    ordered = _in_wire_order(dict(obj) if kind.custom else obj, kind)
    if "metadata" in ordered:
        ordered["metadata"] = dict(ordered["metadata"])
    return Decoded(ordered, [])


def _decoded_repeats(
    duplicate_fields: Sequence[str], unknown_fields: list[str], kind: Kind
) -> list[str]:
    """The repeated fields Go's decoder sees as such: into a Go struct, not those of an
    unknown field, which it skips (each is reported once, as unknown); a custom resource is
    decoded into a map, which sees them all."""
    if kind.custom or not unknown_fields:
        return list(duplicate_fields)
    skipped = tuple(path + sep for path in unknown_fields for sep in (".", "["))
    return [
        path
        for path in duplicate_fields
        if path not in unknown_fields and not path.startswith(skipped)
    ]


def _in_wire_order(obj: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """`obj` with the URL's type and its top-level fields in the order kube-apiserver writes
    them, which every read and watch event then keeps: a built-in kind's Go struct order
    (TypeMeta's kind and apiVersion, ObjectMeta, spec, the rest, status last); a custom
    resource's as Go writes a map (unstructured.Unstructured), keys sorted."""
    if kind.custom:
        obj["apiVersion"] = kind.api_version
        obj["kind"] = kind.kind
        return {key: obj[key] for key in sorted(obj)}
    ordered = {"kind": kind.kind, "apiVersion": kind.api_version}
    if "metadata" in obj:
        ordered["metadata"] = obj["metadata"]
    if "spec" in obj:
        ordered["spec"] = obj["spec"]
    # The rest in the body's order (update keeps the place of a key already there: the type
    # and the two fields above), then the type set again and the status moved last: a dict's
    # update walks the body in C, where a loop testing each key took a fifth of an Event's
    # in-process decoding.
    ordered.update(obj)
    ordered["kind"] = kind.kind
    ordered["apiVersion"] = kind.api_version
    if "status" in ordered:
        ordered["status"] = ordered.pop("status")
    return ordered


# Versions kube-apiserver v1.32 also serves for a kind Pinnace serves at another version: they
# decode, then fail the handler's version check.
_CONVERTIBLE_VERSIONS = {
    "autoscaling/v2": (("autoscaling/v1", "HorizontalPodAutoscaler"),),
}


def _cannot_handle(body_kind: str, version: str, kind: Kind, why: str) -> StatusError:
    return status.bad_request(
        f'{body_kind} in version "{version}" cannot be handled as a {kind.kind}: {why}'
    )


def _undecodable(body_kind: str, version: str, kind: Kind, e: SchemaError) -> Undecodable:
    return Undecodable(e, _cannot_handle(body_kind, version, kind, str(e)).message)


def _summary(obj: Any) -> str:
    text = json.dumps(obj, separators=(",", ":"), default=str)
    return text if len(text) <= 30 else text[:30] + " ..."


def _type_meta(obj: Any, kind: Kind) -> tuple[str, str]:
    """The body's kind and apiVersion, with the URL's filling in what it leaves out."""
    problem = ""
    if not isinstance(obj, dict):
        problem = (
            f"json: cannot unmarshal {json_type(obj)} into Go value of type struct "
            '{ APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" }'
        )
    else:
        for key in ("apiVersion", "kind"):
            value = obj.get(key)
            if value is not None and not isinstance(value, str):
                problem = (
                    f"json: cannot unmarshal {json_type(value)} into Go struct field "
                    f".{key} of type string"
                )
                break
    if problem:
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {kind.kind}): "
            f"couldn't get version/kind; json parse error: {problem} ({_summary(obj)})"
        )
    body_kind = obj.get("kind") or kind.kind
    api_version = obj.get("apiVersion") or ""
    group, _, version = api_version.rpartition("/")
    if not version and group in ("", kind.group):
        api_version = kind.api_version
    return body_kind, api_version


def _mismatch(body_kind: str, group: str, version: str, kind: Kind) -> StatusError:
    from pinnace.api import catalog  # the catalog imports every kind; only needed here

    api_version = f"{group}/{version}" if group else version
    if (api_version, body_kind) in _CONVERTIBLE_VERSIONS.get(kind.api_version, ()):
        return status.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({kind.api_version})"
        )
    other = catalog.by_kind(api_version, body_kind)
    if other is None:
        why = (
            f'no kind "{body_kind}" is registered for version "{api_version}" in scheme '
            '"k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"'
        )
    else:
        internal = (kind.group or "core").split(".")[0]
        why = (
            f"converting ({other.version}.{other.kind}) to ({internal}.{kind.kind}): "
            "unknown conversion"
        )
    return _cannot_handle(body_kind, version, kind, why)
