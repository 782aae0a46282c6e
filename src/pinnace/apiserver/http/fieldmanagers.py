"""The manager of a write through HTTP, as kube-apiserver's handlers name it for the field
manager: the request's `fieldManager`, else its User-Agent's product name (`kubectl`,
`OpenAPI-Generator`). The pipeline records what that manager set (`pinnace.apiserver.patching`
for patches and server-side apply).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache

from pinnace.api.options import WriteOptions
from pinnace.apiserver.http.params import MAX_FIELD_MANAGER_LENGTH
from pinnace.apiserver.http.request import Request


def manager_name(field_manager: str, user_agent: str) -> str:
    """The fieldManager given, else the User-Agent up to its first "/"."""
    if field_manager:
        return field_manager
    return user_agent.split("/", 1)[0][:MAX_FIELD_MANAGER_LENGTH]


def with_manager(options: WriteOptions, request: Request) -> WriteOptions:
    """The options with the write's manager: fieldManager, else the User-Agent's product."""
    manager = manager_name(options.field_manager, request.header("user-agent"))
    if manager == options.field_manager:
        return options
    return _managed(options, manager)


@lru_cache(maxsize=256)
def _managed(options: WriteOptions, manager: str) -> WriteOptions:
    """Made once per options and manager: a client writes with the same ones again and
    again, and `dataclasses.replace` takes longer than a look-up."""
    return dataclasses.replace(options, field_manager=manager)
