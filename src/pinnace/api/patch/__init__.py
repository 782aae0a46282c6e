"""Every PATCH kind kube-apiserver v1.32 accepts, and server-side apply, as pure functions
over Kubernetes JSON objects (dicts). Nothing here touches storage; failures are
`pinnace.api.status.StatusError`s worded as kube-apiserver's.
"""

from pinnace.api.patch import strict
from pinnace.api.patch.fieldmanager import server_side_apply, track_update
from pinnace.api.patch.json_patch import MAX_JSON_PATCH_OPERATIONS, apply_json_patch
from pinnace.api.patch.merge_patch import apply_json_merge_patch, create_json_merge_patch
from pinnace.api.patch.strategic import apply_strategic_merge_patch
from pinnace.api.patch.types import PatchType

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchType",
    "apply_json_merge_patch",
    "apply_json_patch",
    "apply_strategic_merge_patch",
    "create_json_merge_patch",
    "server_side_apply",
    "strict",
    "track_update",
]
