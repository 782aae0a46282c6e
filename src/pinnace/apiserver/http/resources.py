"""The REST verbs on resources, as kube-apiserver's handlers serve them: the method and path
pick the verb, query parameters and bodies become options, the pipeline does the work, and
the answer is encoded as the client negotiated.

| path                  | GET          | POST   | PUT    | PATCH | DELETE           |
| --------------------- | ------------ | ------ | ------ | ----- | ---------------- |
| collection            | list, watch  | create |        |       | deletecollection |
| object                | get          |        | update | patch | delete           |
| object/subresource    | see `subresources`                                            |
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeGuard

from pinnace.api import status
from pinnace.api.authorization import reviews
from pinnace.api.core.componentstatus import COMPONENT_STATUS, ComponentHealth, component_status
from pinnace.api.decode import NO_REPEATS, Repeats, decode
from pinnace.api.fieldselector import rename_field_labels
from pinnace.api.kind import Kind
from pinnace.api.objects import Object, Remembered
from pinnace.api.options import ListOptions, WriteOptions, parse_selectors
from pinnace.api.patch import PatchType
from pinnace.api.tables import IncludeObject
from pinnace.api.versions import ServedVersion
from pinnace.apiserver import binding, deletion
from pinnace.apiserver.auth.authentication import Authenticator
from pinnace.apiserver.auth.reviews import answer, review_token
from pinnace.apiserver.auth.security import UNSECURED_USER
from pinnace.apiserver.auth.user import requester
from pinnace.apiserver.filters import filter_for
from pinnace.apiserver.http import fieldmanagers, negotiation, params, patching, subresources
from pinnace.apiserver.http.bodies import WrittenBody, parse_written_body
from pinnace.apiserver.http.negotiation import BodyType
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import (
    Encoder,
    Response,
    created_response,
    json_response,
    status_response,
    warning_headers,
)
from pinnace.apiserver.http.routes import ResourceTarget, method_not_allowed
from pinnace.apiserver.http.watchstream import watch_stream
from pinnace.apiserver.server import Result

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

INCLUDE_OBJECT: tuple[IncludeObject, ...] = ("None", "Metadata", "Object")


ComponentChecks = Callable[[], Awaitable[list[ComponentHealth]]]
"""Checks the control plane's components now (the ComponentStatuses served)."""


class ResourceHandler:
    def __init__(
        self,
        server: APIServer,
        rand: random.Random,
        tokens: Authenticator,
        components: ComponentChecks | None = None,
    ) -> None:
        self.server = server
        self.rand = rand
        self.tokens = tokens
        """Answers TokenReviews."""
        self.components = components
        """The checks behind ComponentStatuses; None: there are none to report."""
        self._answers = _Answers()

    async def handle(self, request: Request, target: ResourceTarget) -> Response:
        """The answer, with the `Warning` of a deprecated custom resource version whatever
        it is (crdHandler adds it before any handler runs)."""
        warning = (target.conversion.served if target.conversion else target.kind).warning
        if not warning:
            return await self.answer(request, target)
        try:
            response = await self.answer(request, target)
        except status.StatusError as error:
            response = status_response(error)
        response.headers += warning_headers([warning])
        return response

    async def answer(self, request: Request, target: ResourceTarget) -> Response:
        if target.subresource == "log":
            return await subresources.log(self.server, request, target)  # always text/plain
        # Negotiated first, so a request whose answer cannot be sent (406) changes nothing.
        encoder = self.encoder(request, target)
        if target.subresource:
            return await subresources.handle(self, request, target, encoder)
        verb = _verb(request.method, target)
        if verb not in target.kind.verbs:
            raise _terminating(target.kind) if target.kind.terminating else method_not_allowed()
        if target.kind is COMPONENT_STATUS:
            return await self.component_statuses(request, target, encoder)
        if verb == "list":
            return await self.list_or_watch(request, target, encoder)
        if verb == "get":
            version = params.first(request.query, "resourceVersion") or ""
            if version in ("", "0") and encoder.plain_json:
                remembered = self._answers.of(target)
                body = await self.server.derived(
                    target.kind, target.namespace, target.name, encoder.json, remembered, version
                )
                return Response(200, body)
            obj = await self.server.get(target.kind, target.namespace, target.name, version)
            return encoder.object(obj)
        if verb == "create":
            return await self.create(request, target, encoder)
        if verb == "update":
            return await self.update(request, target, encoder)
        if verb == "patch":
            return await self.patch(request, target, encoder)
        if verb == "delete":
            options = params.delete_options(request.query, await request.options_body())
            result = await self.server.delete(target.kind, target.namespace, target.name, options)
            # v1.32 answers 202 to a deprecated orphanDependents=false only, when the object
            # stays for now; other deletions it leaves in progress are a 200 too.
            accepted = options.orphan_dependents is False and not result.removed
            response = encoder.object(result.obj, 202 if accepted else 200)
            response.headers += warning_headers(result.warnings)
            return response
        listing = params.list_options(request.query, self.rand)
        options = params.delete_options(request.query, await request.options_body())
        listed = await self.server.delete_collection(
            target.kind, target.namespace, listing.options, options
        )
        response = encoder.list(listed)
        response.headers += warning_headers(deletion.delete_warnings(target.kind, options))
        return response

    async def component_statuses(
        self, request: Request, target: ResourceTarget, encoder: Encoder
    ) -> Response:
        """The components checked now, as componentstatus' REST serves them: a list filtered
        by its selectors (it has no watch), or the one named; a name it does not check is
        the registry's plain error, a 500."""
        checked = [] if self.components is None else await self.components()
        if target.name:
            found = [health for health in checked if health.name == target.name]
            if not found:
                raise status.StatusError(500, "", f"Component not found: {target.name}")
            return encoder.object(component_status(found[0]))
        listing = params.list_options(request.query, self.rand, target.watch_path)
        if listing.watch:
            raise method_not_allowed()
        selected = filter_for(target.kind, listing.options)
        items = [component_status(health) for health in checked]
        listed = {
            "kind": "ComponentStatusList",
            "apiVersion": "v1",
            "metadata": {},
            "items": [item for item in items if selected.matches(item)],
        }
        return encoder.list(listed)

    async def review(self, target: ResourceTarget, body: Object) -> Any:
        """A review answered at once, never stored (`auth.reviews`); `body` decoded as any
        created object is."""
        errs = target.kind.validate(body)
        if errs:
            raise status.invalid(target.kind.kind, "", errs, target.kind.group)
        if target.kind.kind == "TokenReview":
            return await review_token(self.tokens, body)
        who = requester()
        user = who.user if who is not None else UNSECURED_USER
        return await answer(self.server.authorizer, target.kind, target.namespace, body, user)

    def encoder(self, request: Request, target: ResourceTarget) -> Encoder:
        negotiated = negotiation.negotiate_resource(request.header("accept"))
        include = params.first(request.query, "includeObject") or "Metadata"
        if not _is_include_object(include):
            raise status.bad_request(
                f'unrecognized includeObject value: "{include}"; '
                'want one of "None", "Metadata", "Object"'
            )
        clock = self.server.clock
        return Encoder(target.kind, negotiated, include, clock.now, target.conversion)

    async def list_or_watch(
        self, request: Request, target: ResourceTarget, encoder: Encoder
    ) -> Response:
        listing = params.list_options(request.query, self.rand, target.watch_path)
        options = _at_stored_field_labels(listing.options, target)
        if target.name:  # a watch of one object, through /watch/.../<name>
            # As ListResource: a field selector, once its labels are checked, must name it.
            fields = filter_for(target.kind, options).fields
            if fields is None:
                options = _replace_field_selector(options, f"metadata.name={target.name}")
            elif fields.requires_exact_match("metadata.name") != target.name:
                raise status.bad_request("fieldSelector metadata.name doesn't match requested name")
        if listing.watch:
            if "watch" not in target.kind.verbs:
                raise method_not_allowed()
            events = self.server.watch(target.kind, target.namespace, options)
            bookmarks_for = listing.timeout if options.allow_watch_bookmarks else None
            stream = watch_stream(events, encoder, bookmarks_for)
            return Response(200, stream=stream, timeout=listing.timeout)
        listed = await self.server.list(target.kind, target.namespace, options)
        return encoder.list(listed)

    async def create(self, request: Request, target: ResourceTarget, encoder: Encoder) -> Response:
        kind = target.kind
        if kind.namespaced and not target.namespace:
            raise method_not_allowed()
        body_type = negotiation.body_type(request.header("content-type"))
        options = _with_version_rules(params.write_options(request.query, "CreateOptions"), target)
        written = await request.parsed(
            parse_written_body, body_type, kind.kind, options.field_validation != "Ignore"
        )
        body, warnings, repeats = _stored(target, written, options.field_validation)
        if kind.plural == "bindings" and not kind.group:
            answer = await binding.bind(self.server, target.namespace, "", body, options)
            return created_response(answer)
        if kind.group in (reviews.AUTHORIZATION, reviews.AUTHENTICATION):
            review = decode(body, kind, json_text=_json_body(target, body_type)).obj
            return json_response(await self.review(target, review), 201)
        options = fieldmanagers.with_manager(options, request)
        result = await self.server.create(
            kind,
            target.namespace,
            body,
            options,
            json_body=_json_body(target, body_type),
            repeats=repeats,
        )
        result.warnings[:0] = warnings
        return _written(encoder, result, options.field_validation, 201)

    async def update(
        self, request: Request, target: ResourceTarget, encoder: Encoder, subresource: str = ""
    ) -> Response:
        body_type = negotiation.body_type(request.header("content-type"))
        options = _with_version_rules(params.write_options(request.query, "UpdateOptions"), target)
        written = await request.parsed(
            parse_written_body, body_type, target.kind.kind, options.field_validation != "Ignore"
        )
        body, warnings, repeats = _stored(target, written, options.field_validation)
        options = fieldmanagers.with_manager(options, request)
        result = await self.server.update(
            target.kind,
            target.namespace,
            target.name,
            body,
            options,
            subresource,
            json_body=_json_body(target, body_type),
            repeats=repeats,
        )
        result.warnings[:0] = warnings
        code = 201 if result.created else 200
        return _written(encoder, result, options.field_validation, code)

    async def patch(
        self, request: Request, target: ResourceTarget, encoder: Encoder, subresource: str = ""
    ) -> Response:
        patch_type = negotiation.patch_type(request.header("content-type"), target.kind.custom)
        apply = patch_type is PatchType.APPLY
        options = params.write_options(request.query, "PatchOptions", apply=apply, patch=True)
        options = _with_version_rules(options, target)
        document, repeats = await request.parsed(
            patching.parse_patch, patch_type, options.field_validation != "Ignore"
        )
        options = fieldmanagers.with_manager(options, request)
        result = await self.server.patch(
            target.kind,
            target.namespace,
            target.name,
            patch_type,
            document,
            options,
            subresource,
            target.conversion,
            repeats=repeats,
        )
        code = 201 if result.created else 200
        return _written(encoder, result, options.field_validation, code)


def _written(encoder: Encoder, result: Result, validation: str, code: int) -> Response:
    response = encoder.object(result.obj, code)
    if validation != "Ignore":
        response.headers += warning_headers(result.warnings)
    return response


GETS_REMEMBERED = 1024
"""Objects whose JSON answer is kept, per kind and version served."""
_VERSIONS_REMEMBERED = 256


class _Answers:
    """The JSON answers of GETs, per kind and version served, each kept until its object is
    written again (`APIServer.derived`): an object read again unchanged (a kubelet's or a
    controller's GET, `kubectl get` of one object) is neither unpacked from the store nor
    encoded anew. Stored objects never change, and their answer depends on nothing else."""

    def __init__(self) -> None:
        self._by_version: dict[
            tuple[int, int], tuple[Kind, ServedVersion | None, Remembered[tuple[int, bytes]]]
        ] = {}

    def of(self, target: ResourceTarget) -> Remembered[tuple[int, bytes]]:
        key = (id(target.kind), id(target.conversion))
        found = self._by_version.get(key)
        if found is None:
            if len(self._by_version) >= _VERSIONS_REMEMBERED:  # CRDs changed often
                self._by_version.clear()
            found = (target.kind, target.conversion, Remembered(GETS_REMEMBERED))
            self._by_version[key] = found  # holds the kind and version: their ids stay theirs
        return found[2]


_COLLECTION_VERBS = {"GET": "list", "POST": "create", "DELETE": "deletecollection"}
_OBJECT_VERBS = {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def _verb(method: str, target: ResourceTarget) -> str:
    verbs = _COLLECTION_VERBS if target.collection else _OBJECT_VERBS
    verb = verbs.get(method)
    if verb is None or (target.watch_path and verb not in ("list", "get")):
        raise method_not_allowed()
    if target.watch_path:
        return "list"
    if target.kind.namespaced and not target.namespace and verb != "list":
        raise method_not_allowed()
    return verb


def _terminating(kind: Kind) -> status.StatusError:
    """crdHandler's refusal of a create while the kind's CRD is being deleted."""
    details = {"group": kind.group, "kind": kind.plural}
    message = "create not allowed while custom resource definition is terminating"
    return status.StatusError(405, "MethodNotAllowed", message, details)


def _json_body(target: ResourceTarget, body_type: BodyType) -> bool:
    """Whether the body to write is the JSON text the client sent, as parsed."""
    return body_type is BodyType.JSON and target.conversion is None


def _stored(
    target: ResourceTarget, written: WrittenBody, validation: str
) -> tuple[Any, list[str], Repeats]:
    """The body to write, as the stored version; the warnings of decoding it at the version it
    was sent at when that is another; and what the text repeats, for the server's decoding to
    report when that decoding did not."""
    if target.conversion is None:
        return written.value, [], written.repeats
    body, warnings = target.conversion.decoded_to_stored(
        written.value, strict=validation == "Strict", repeats=written.repeats
    )
    return body, warnings, NO_REPEATS


def _replace_field_selector(options: ListOptions, selector: str) -> ListOptions:
    return dataclasses.replace(options, field_selector=selector)


def _at_stored_field_labels(options: ListOptions, target: ResourceTarget) -> ListOptions:
    """A field selector made at a version with labels of its own, in the stored kind's."""
    labels = target.conversion.field_labels if target.conversion is not None else None
    if labels is None or not options.field_selector:
        return options
    fields = parse_selectors(options).fields
    if fields is None:
        return options
    return _replace_field_selector(options, str(rename_field_labels(fields, labels)))


def _with_version_rules(options: WriteOptions, target: ResourceTarget) -> WriteOptions:
    """Write options carrying the validation of the version written at, when it has its own."""
    return options if target.conversion is None else target.conversion.with_rules(options)


def _is_include_object(value: str) -> TypeGuard[IncludeObject]:
    return value in INCLUDE_OBJECT
