"""Subresources: status, pods' ephemeralcontainers and resize, CertificateSigningRequests'
approval (GET/PUT/PATCH; resize only while its feature gate is on), scale (the autoscaling/v1
Scale of a Deployment or ReplicaSet), binding, eviction, log (text), namespaces' finalize,
serviceaccounts' token, and the streaming ones (`streaming`: WebSocket upgrades only). The rest
kube-apiserver serves (proxy) answer 405."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pinnace.api.patch import PatchType
from pinnace.apiserver import binding, eviction, token_request
from pinnace.apiserver.http import fieldmanagers, negotiation, params, streaming
from pinnace.apiserver.http.bodies import parse_json, parse_object_body
from pinnace.apiserver.http.patching import parse_patch
from pinnace.apiserver.http.request import Request
from pinnace.apiserver.http.responses import (
    TEXT_PLAIN,
    Encoder,
    Response,
    created_response,
    json_response,
    text_response,
    warning_headers,
)
from pinnace.apiserver.http.routes import ResourceTarget, method_not_allowed
from pinnace.apiserver.logs import log_options, log_text, read_log
from pinnace.apiserver.patching import patcher
from pinnace.apiserver.scale import ScaleChange, apply_scale_config, read_scale, update_scale

if TYPE_CHECKING:
    from pinnace.apiserver.http.resources import ResourceHandler
    from pinnace.apiserver.server import APIServer

_STATUS_LIKE = ("status", "finalize", "resize", "ephemeralcontainers", "approval")
_PATCHABLE = ("status", "resize", "ephemeralcontainers", "approval")


async def handle(
    handler: ResourceHandler, request: Request, target: ResourceTarget, encoder: Encoder
) -> Response:
    sub, method = target.subresource, request.method
    server = handler.server
    server.check_served(target.kind, sub, target.name)
    if sub in _STATUS_LIKE:
        if method == "GET" and sub in _PATCHABLE:
            obj = await server.get(target.kind, target.namespace, target.name)
            return encoder.object(obj)
        if method == "PUT":
            return await handler.update(request, target, encoder, sub)
        if method == "PATCH" and sub in _PATCHABLE:
            return await handler.patch(request, target, encoder, sub)
    elif sub == "scale" and method in ("GET", "PUT", "PATCH"):
        return await _scale(handler, request, target)
    elif sub == "binding" and method == "POST":
        body = await request.parsed(parse_json, request.header("content-type"))
        options = params.write_options(request.query, "CreateOptions")
        answer = await binding.bind(server, target.namespace, target.name, body, options)
        return created_response(answer)
    elif streaming.is_streaming(target):
        return await streaming.plain(server, request, target)
    elif sub == "eviction" and method == "POST":
        body = await request.parsed(parse_json, request.header("content-type"))
        params.write_options(request.query, "CreateOptions")  # validated as any create's
        dry_run = request.query.get("dryRun", [])
        answer = await eviction.evict(server, target.namespace, target.name, body, dry_run)
        return created_response(answer)
    elif sub == "token" and method == "POST":
        body = await request.parsed(parse_json, request.header("content-type"))
        result = await token_request.request_token(server, target.namespace, target.name, body)
        response = json_response(result.obj, 201)
        response.headers += warning_headers(result.warnings)
        return response
    raise method_not_allowed()


async def log(server: APIServer, request: Request, target: ResourceTarget) -> Response:
    if request.method != "GET":
        raise method_not_allowed()
    options = log_options(request.query)
    if not options.follow:
        return text_response(await log_text(server, target.namespace, target.name, options))
    chunks = await read_log(server, target.namespace, target.name, options)
    encoded = (chunk.encode() async for chunk in chunks)
    return Response(200, content_type=TEXT_PLAIN, stream=encoded, timeout=None)


async def _scale(handler: ResourceHandler, request: Request, target: ResourceTarget) -> Response:
    server, kind = handler.server, target.kind
    if request.method == "GET":
        return json_response(await read_scale(server, kind, target.namespace, target.name))
    if request.method == "PUT":
        body_type = negotiation.body_type(request.header("content-type"))
        scale = await request.parsed(parse_object_body, body_type, "Scale")
        options = params.write_options(request.query, "UpdateOptions")
        change: ScaleChange = lambda _current: scale  # noqa: E731
    else:
        patch_type = negotiation.patch_type(request.header("content-type"))
        apply = patch_type is PatchType.APPLY
        options = params.write_options(request.query, "PatchOptions", apply=apply, patch=True)
        document, _ = await request.parsed(parse_patch, patch_type, False)
        if apply:
            applied = await apply_scale_config(
                server, kind, target.namespace, target.name, document, options
            )
            return json_response(applied.obj)
        # Scale has no strategic-merge shape of its own; its fields merge as a merge patch.
        if patch_type is PatchType.STRATEGIC_MERGE:
            patch_type = PatchType.MERGE
        change = patcher(kind, patch_type, document)
    options = fieldmanagers.with_manager(options, request)
    result = await update_scale(server, kind, target.namespace, target.name, change, options)
    return json_response(result.obj)
