"""PATCH in the pipeline, as kube-apiserver's patch handler builds it: the change each patch
type makes to the stored object (json-patch, merge-patch, strategic-merge-patch, server-side
apply), the managedFields it records, and its field validation: what the patch's text repeats
and the patched object's unknown fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pinnace.api.decode import Repeats, Undecodable
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, without_empty_metadata
from pinnace.api.patch import (
    PatchType,
    apply_json_merge_patch,
    apply_json_patch,
    apply_strategic_merge_patch,
    server_side_apply,
    strict,
    track_update,
)
from pinnace.api.schema import SchemaError
from pinnace.api.status import StatusError
from pinnace.api.versions import ServedVersion

Mutation = Callable[[Object], Object]


def patcher(kind: Kind, patch_type: PatchType, patch: Any) -> Mutation:
    """old object -> patched object, for a json, merge or strategic merge patch; the old
    object is left as it is (the result may share what the patch did not touch with it)."""
    if patch_type is PatchType.JSON:
        return lambda old: _decodable(apply_json_patch(old, patch))
    if patch_type is PatchType.MERGE:
        return lambda old: _decodable(apply_json_merge_patch(old, patch))
    return lambda old: _decodable(apply_strategic_merge_patch(old, patch, kind))


def _decodable(patched: Any) -> Any:
    """The patched object without what decoding drops, before managedFields compare it with
    the stored one: a patch that only adds `annotations: {}` changes nothing."""
    return without_empty_metadata(patched) if isinstance(patched, dict) else patched


def tracker(
    kind: Kind, manager: str, subresource: str, now: str, conversion: ServedVersion | None
) -> Callable[[Object, Object], Object]:
    """(stored, patched) -> the patched object recording `manager` in managedFields, as
    kube-apiserver's patcher runs the field manager on the object the patch decodes to (its
    unknown fields dropped, its defaults set); `kind` is the version the patch is written
    against, `conversion` the way to it from the stored one."""

    def track(old: Object, new: Object) -> Object:
        if conversion is None:
            return track_update(
                old, new, manager=manager, subresource=subresource, now=now, kind=kind
            )
        served_old, served_new = conversion.from_stored(old), conversion.from_stored(new)
        tracked = track_update(
            served_old, served_new, manager=manager, subresource=subresource, now=now, kind=kind
        )
        return conversion.to_stored(tracked)

    return track


def applier(
    kind: Kind, applied: Any, manager: str, force: bool, subresource: str, now: str
) -> Mutation:
    """The server-side apply of `applied` by `manager` to the live `kind` object."""

    def apply(live: Object) -> Object:
        return server_side_apply(
            live,
            applied,
            manager=manager,
            force=force,
            now=now,
            subresource=subresource,
            kind=kind,
        )

    return apply


def apply_create(kind: Kind, applied: Any, manager: str, now: str) -> Object:
    """The `kind` object an apply creates when there is none yet."""
    return server_side_apply(None, applied, manager=manager, force=False, now=now, kind=kind)


def converted(
    mutation: Mutation, conversion: ServedVersion, validation: FieldValidation
) -> Mutation:
    """`mutation` written against the served version, run on the stored one; the patched
    object must decode as the served version's type (the patch handler's error otherwise,
    as for the stored version's)."""

    def mutate(stored: Object) -> Object:
        patched = mutation(conversion.from_stored(stored))
        try:
            converted, _ = conversion.decoded_to_stored(patched)
        except Undecodable as e:
            raise validation.undecodable(patched, e.cause) from None
        return converted

    return mutate


class FieldValidation:
    """How a patch's result is decoded, as its fieldValidation says (`pinnace.api.patch.
    strict`). With Warn or Strict, `checked` runs the handler's strict decoding of the patch's
    text around the mutation (before a json, merge or strategic merge patch is applied, after
    an apply), `decoded` gets the patched object's unknown fields; with Warn, `warnings` are
    then the response's. With Ignore neither is looked at. Whatever it is, `undecodable`
    words the patch handler's error for a patched object that does not decode."""

    def __init__(self, validation: str, patch_type: PatchType, patch: Any, repeats: Repeats):
        self._ignore = validation == "Ignore"
        self._strict = validation == "Strict"
        self._patch_type, self._patch, self._repeats = patch_type, patch, repeats
        self._text_errors: list[str] = []
        self._yaml_warnings: list[str] = []
        self._decoding_warnings: list[str] = []

    @property
    def warnings(self) -> list[str]:
        return self._yaml_warnings + self._decoding_warnings

    def checked(self, mutation: Mutation) -> Mutation:
        if self._ignore:
            return mutation
        if self._patch_type is PatchType.APPLY:

            def apply(live: Object) -> Object:
                applied = mutation(live)
                self.applied()
                return applied

            return apply

        def patch(old: Object) -> Object:
            self._text_errors = strict.patch_text_errors(
                self._patch_type, self._patch, self._repeats.fields
            )
            return mutation(old)

        return patch

    def applied(self) -> None:
        """After a server-side apply: the keys its YAML repeats."""
        if self._ignore or not self._repeats.yaml:
            return
        if self._strict:
            raise strict.strict_apply_error(self._repeats.yaml)
        self._yaml_warnings = strict.yaml_warnings(self._repeats.yaml)

    def decoded(self, patched: Object, unknown_fields: list[str]) -> None:
        """`patched` decoded, with these `unknown field` errors: all the errors reported, or
        refused."""
        if self._ignore:
            return
        errors = self._text_errors + unknown_fields
        if errors and self._strict:
            raise strict.refused(self._patch_type, self._patch, patched, errors)
        self._decoding_warnings = errors

    def undecodable(self, patched: Object, cause: SchemaError) -> StatusError:
        """The error for `patched`, which fails to decode for `cause`."""
        return strict.undecodable(self._patch_type, self._patch, patched, cause)
