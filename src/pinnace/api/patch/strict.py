"""Field validation of a PATCH, as kube-apiserver v1.32's patch handler does it under
`fieldValidation` Warn (the default) or Strict (staging/src/k8s.io/apiserver/pkg/endpoints/
handlers/patch.go).

The patch's own text is decoded strictly first (sigs.k8s.io/json's UnmarshalStrict): a JSON
patch into its operations (`json patch unknown field "[0].foo"`, `json patch duplicate field
"[1].path"`), a merge or strategic merge patch into a map (`duplicate field "spec.paused"`);
then the patched object is decoded, and its unknown fields follow. With Warn each is a
warning; with Strict all of them are one 422 Invalid on the field `patch`, whose value is the
patched object's JSON (a JSON or merge patch) or the patch as Go's `%+v` prints a map (a
strategic merge patch). A server-side apply's repeated YAML keys are its YAML converter's
error: a warning a line, or a 400 with Strict (`StrictApply`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pinnace.api import field
from pinnace.api.goquote import quote
from pinnace.api.patch.errors import bad_request, go_value, gvk, gvknn, unconverted
from pinnace.api.patch.fieldpath import go_json
from pinnace.api.patch.types import PatchType
from pinnace.api.schema import SchemaError, unstructured_error
from pinnace.api.status import StatusError

__all__ = [
    "patch_text_errors",
    "refused",
    "strict_apply_error",
    "undecodable",
    "yaml_warnings",
]

_OPERATION_FIELDS = ("op", "path", "from", "value")
"""The fields of the handler's jsonPatchOp, matched case-sensitively."""
_MAX_ERRORS = 100
"""sigs.k8s.io/json keeps at most this many strict errors."""
_YAML_ERRORS = "yaml: unmarshal errors:\n"


def patch_text_errors(
    patch_type: PatchType, patch: Any, duplicate_fields: Sequence[str]
) -> list[str]:
    """The strict decoding errors of the patch's own text, given the paths of the fields it
    repeats; a 400 when a JSON patch is not a list of operations (UnmarshalStrict's error)."""
    if patch_type is PatchType.JSON:
        return _operation_errors(patch, duplicate_fields)
    return [f"duplicate field {quote(path)}" for path in duplicate_fields]


def _operation_errors(ops: Any, duplicate_fields: Sequence[str]) -> list[str]:
    """Decoding into []jsonPatchOp: its unknown fields (and nothing beneath them, which Go
    skips), and the fields repeated in the rest, each operation's in turn."""
    if ops is None:
        return []
    if not isinstance(ops, list):
        raise _undecodable(ops, "[]handlers.jsonPatchOp")
    errors: list[str] = []
    for i, op in enumerate(ops):
        if op is None:
            continue
        if not isinstance(op, dict):
            raise _undecodable(op, "handlers.jsonPatchOp")
        prefix = f"[{i}]."
        unknown = [prefix + key for key in op if key not in _OPERATION_FIELDS]
        errors += [f"json patch unknown field {quote(path)}" for path in unknown]
        skipped = tuple(path + sep for path in unknown for sep in (".", "["))
        errors += [
            f"json patch duplicate field {quote(path)}"
            for path in duplicate_fields
            if path.startswith(prefix) and path not in unknown and not path.startswith(skipped)
        ]
    return errors[:_MAX_ERRORS]


def _undecodable(value: Any, go_type: str) -> StatusError:
    kind = {dict: "object", str: "string", bool: "bool", list: "array"}.get(type(value), "number")
    return bad_request(
        f"error decoding patch: json: cannot unmarshal {kind} into Go value of type {go_type}"
    )


def refused(patch_type: PatchType, patch: Any, patched: Any, errors: Sequence[str]) -> StatusError:
    """Strict's 422."""
    return _invalid(patch_type, patch, patched, "strict decoding error: " + ", ".join(errors))


def undecodable(patch_type: PatchType, patch: Any, patched: Any, cause: SchemaError) -> StatusError:
    """A patched object that does not fit the kind's Go types (a string where a number goes),
    whatever the fieldValidation: a json or merge patch's is the JSON decoder's error, a
    strategic merge patch's the unstructured converter's, in the same 422 as Strict's; an
    apply's is a 500, its field manager's failure to convert the merged object (which
    typed.py's checks let through: a quantity, an int-or-string)."""
    if patch_type is PatchType.JSON or patch_type is PatchType.MERGE:
        return _invalid(patch_type, patch, patched, str(cause))
    if patch_type is PatchType.STRATEGIC_MERGE:
        return _invalid(patch_type, patch, patched, _converter_error(cause, floats=False))
    return unconverted(
        f"failed to convert new object ({gvknn(patch)}) to proper version: unable to convert "
        f"unstructured object to {gvk(patch)}: {_converter_error(cause, floats=True)}"
    )


def _converter_error(cause: SchemaError, floats: bool) -> str:
    found = None
    if cause.expected is not None:
        found = unstructured_error(cause.value, cause.expected, floats=floats)
    return str(cause) if found is None else found


def _invalid(patch_type: PatchType, patch: Any, patched: Any, detail: str) -> StatusError:
    """NewInvalid with an empty kind and name, for the field `patch`: its value is the
    patched object's JSON (a json or merge patch) or the patch as Go's `%+v` prints a map
    (a strategic merge patch)."""
    if patch_type is PatchType.STRATEGIC_MERGE:
        value = go_value(patch)
    else:
        value = go_json(_sorted(patched))
    cause = field.invalid("patch", value, detail)
    return StatusError(422, "Invalid", f' "" is invalid: {cause}', {"causes": [cause.cause()]})


def _sorted(value: Any) -> Any:
    """As json-patch writes the patched document back: from Go maps, keys sorted."""
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def strict_apply_error(yaml_error: str) -> StatusError:
    """Strict's 400 for an apply whose YAML repeats keys (yaml.UnmarshalStrict's error)."""
    return bad_request(f"error strict decoding YAML: error converting YAML to JSON: {yaml_error}")


def yaml_warnings(yaml_error: str) -> list[str]:
    """Warn's warnings for the same: a line each (the handler's parseYAMLWarnings)."""
    return [line.strip() for line in yaml_error.removeprefix(_YAML_ERRORS).split("\n")]
