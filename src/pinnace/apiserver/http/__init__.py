"""The HTTP front end: kube-apiserver's REST API over the in-process pipeline
(`pinnace.apiserver.server.APIServer`), as an ASGI application that `pinnace up` serves with
uvicorn.

A request goes: `app` (errors become Statuses) → `routes` (the path names a discovery
document or a resource) → `resources` or `subresources` (the verb, its options from `params`,
its body from `bodies`/`protobuf`, patches from `patching` and `fieldmanagers`) → the
pipeline → `responses` (JSON, YAML, Table or partial metadata, as `negotiation` decided;
watches through `watchstream`). `nonresource` serves /version, health checks and OpenAPI.
"""
