"""Kubernetes `Status` errors: every failure a client sees is one of these.

Messages, reasons and codes follow apimachinery's api/errors so clients (kubectl, the
Python client) print and classify them as they would against kube-apiserver.
"""

from __future__ import annotations

from typing import Any

from pinnace.api import goquote
from pinnace.api.field import FieldError, aggregate_message


def qualified_resource(resource: str, group: str = "") -> str:
    """`pods`, or `deployments.apps` for a resource of a named group."""
    return f"{resource}.{group}" if group else resource


class StatusError(Exception):
    """An API failure carrying the `Status` object kube-apiserver would send."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.list_meta: dict[str, Any] = {}
        """The Status' metadata (ListMeta): a continue token for an expired one."""

    def status(self) -> dict[str, Any]:
        """The Status with metav1.Status' fields in their order (clients that compare error
        bodies as text see kube-apiserver's), the empty ones left out as Go's omitempty does;
        empty details are sent as `{}`, as kube-apiserver sends a non-nil StatusDetails."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": dict(self.list_meta),
            "status": "Failure",
        }
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = _in_go_order(self.details, _DETAILS_FIELDS)
            if "causes" in body["details"]:
                causes = body["details"]["causes"]
                body["details"]["causes"] = [_in_go_order(c, _CAUSE_FIELDS) for c in causes]
        if self.code:
            body["code"] = self.code
        return body

    def __repr__(self) -> str:
        return f"StatusError({self.code}, {self.reason!r}, {self.message!r})"


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"
"""v1.NamespaceTerminatingCause: the cause of the namespace lifecycle admission's refusal of new
content in a namespace being deleted."""


def namespace_terminating(e: StatusError) -> bool:
    """A create refused because its namespace is being deleted (errors.HasStatusCause with
    NamespaceTerminatingCause)."""
    causes = (e.details or {}).get("causes") or ()
    return any(c.get("reason") == NAMESPACE_TERMINATING_CAUSE for c in causes)


_DETAILS_FIELDS = ("name", "group", "kind", "uid", "causes", "retryAfterSeconds")
_CAUSE_FIELDS = ("reason", "message", "field")


def _in_go_order(fields: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """`fields` in the order of the Go struct's fields, empty values left out (all of
    StatusDetails' and StatusCause's are omitempty)."""
    return {name: fields[name] for name in order if fields.get(name)}


def _details(name: str, group: str, kind: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = kind
    details.update(extra)
    return details


PATH_NOT_FOUND_MESSAGE = "the server could not find the requested resource"


def path_not_found() -> StatusError:
    """A path that names nothing served (an unknown resource or subresource)."""
    return StatusError(404, "NotFound", PATH_NOT_FOUND_MESSAGE, {})


def not_found(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{qualified_resource(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(resource: str, name: str, group: str = "") -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, name: str, why: str, group: str = "") -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


STALE_RESOURCE_VERSION = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(kind: str, name: str, errors: list[FieldError], group: str = "") -> StatusError:
    message = f'{kind}.{group} "{name}" is invalid' if group else f'{kind} "{name}" is invalid'
    if errors:
        message += ": " + aggregate_message(errors)
    return StatusError(
        422,
        "Invalid",
        message,
        _details(name, group, kind, causes=[e.cause() for e in errors]),
    )


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def unauthorized(message: str = "Unauthorized") -> StatusError:
    return StatusError(401, "Unauthorized", message)


def forbidden(resource: str, name: str, why: str, group: str = "") -> StatusError:
    subject = qualified_resource(resource, group)
    message = (
        f'{subject} "{name}" is forbidden: {why}' if name else f"{subject} is forbidden: {why}"
    )
    return StatusError(403, "Forbidden", message, _details(name, group, resource))


def method_not_supported(resource: str, action: str, group: str = "") -> StatusError:
    return StatusError(
        405,
        "MethodNotAllowed",
        f"{action} is not supported on resources of kind {qualified_resource(resource, group)!r}",
        _details("", group, resource),
    )


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def resource_expired(message: str) -> StatusError:
    """A watch or list from a compacted revision: `too old resource version: 5 (100)`."""
    return StatusError(410, "Expired", message)


def request_entity_too_large(limit_bytes: int) -> StatusError:
    return StatusError(
        413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit_bytes}"
    )


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - "
        f"accepted media types include: application/json, application/yaml, "
        f"application/apply-patch+yaml (got {content_type!r})",
    )


def timeout(message: str, retry_after_seconds: int = 0) -> StatusError:
    """errors.NewTimeoutError: the request did not finish in time; clients may retry."""
    details = {"retryAfterSeconds": retry_after_seconds} if retry_after_seconds else {}
    return StatusError(504, "Timeout", f"Timeout: {message}", details)


def too_many_requests(message: str, retry_after_seconds: int = 0) -> StatusError:
    details = {"retryAfterSeconds": retry_after_seconds} if retry_after_seconds else None
    return StatusError(429, "TooManyRequests", message, details)


def internal_error(message: str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


_GENERIC_ANSWERS = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    404: ("NotFound", PATH_NOT_FOUND_MESSAGE),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    409: ("Conflict", "the server reported a conflict"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: (
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
    ),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: (
        "Timeout",
        "the server was unable to return a response in the time allotted, but may still be "
        "processing the request",
    ),
}
"""NewGenericServerResponse's reason and message by status code, where the answer's text
has no part in them."""
NOT_ACCEPTABLE_MESSAGE = (
    "the server was unable to respond with a content type that the client supports"
)
_KEEPING_THE_SERVERS_MESSAGE = {403: "Forbidden", 406: "NotAcceptable", 415: "UnsupportedMediaType"}
"""The reasons of the codes whose answer's text says more (who may not do what, which types
are acceptable)."""


def generic_server_response(
    code: int,
    method: str,
    server_message: str,
    resource: str = "",
    group: str = "",
    name: str = "",
    retry_after_seconds: int = 0,
    unexpected: bool = True,
) -> StatusError:
    """errors.NewGenericServerResponse: an answer that is not a Status (a proxy's plain-text
    502, say) as the error client-go makes of it, its reason by the status code. `resource`,
    `group`: what was asked for ("" outside the resources), `name` its object's; `unexpected`
    records the answer's text as a cause of type UnexpectedServerResponse."""
    reason, message = _GENERIC_ANSWERS.get(code, ("", ""))
    if code == 409:
        reason = "AlreadyExists" if method == "POST" else "Conflict"
    elif code in _KEEPING_THE_SERVERS_MESSAGE:
        reason, message = _KEEPING_THE_SERVERS_MESSAGE[code], server_message
        if code == 406 and server_message in ("", "unknown"):
            message = NOT_ACCEPTABLE_MESSAGE
    elif not reason and code >= 500:
        reason = "InternalError"
        quoted = goquote.quote(server_message)
        message = f"an error on the server ({quoted}) has prevented the request from succeeding"
    elif not reason:
        message = f"the server responded with the status code {code} but did not return more "
        message += "information"
    if resource:
        asked = " ".join(filter(None, (qualified_resource(resource, group), name)))
        message += f" ({method.lower()} {asked})"
    details: dict[str, Any] = {"name": name, "group": group, "kind": resource}
    if unexpected:
        details["causes"] = [{"reason": "UnexpectedServerResponse", "message": server_message}]
    if retry_after_seconds:
        details["retryAfterSeconds"] = retry_after_seconds
    return StatusError(code, reason, message, details)
