"""The manager of a write through HTTP, as kube-apiserver's handlers name it for the field
manager: the request's `fieldManager`, else its User-Agent's product name (`kubectl`,
`OpenAPI-Generator`). The pipeline records what that manager set (`pinnace.apiserver.patching`
for patches and server-side apply).
"""

from __future__ import annotations

from pinnace.apiserver.http.params import MAX_FIELD_MANAGER_LENGTH


def manager_name(field_manager: str, user_agent: str) -> str:
    """The fieldManager given, else the User-Agent up to its first "/"."""
    if field_manager:
        return field_manager
    return user_agent.split("/", 1)[0][:MAX_FIELD_MANAGER_LENGTH]
