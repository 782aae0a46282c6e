"""OpenAPI documents of the served kinds, for `kubectl explain`, kubectl's choice between
server-side and client-side field validation, `kubectl apply` patches and other tooling."""

from pinnace.api.openapi.documents import (
    openapi_v2,
    openapi_v3,
    openapi_v3_hash,
    openapi_v3_index,
)

__all__ = ["openapi_v2", "openapi_v3", "openapi_v3_hash", "openapi_v3_index"]
