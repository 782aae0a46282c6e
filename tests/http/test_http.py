"""The HTTP API as kube-apiserver answers it: status codes, Status bodies, headers,
discovery, tables, watch streams and subresources, seen with a plain HTTP client; on the
memory store and on etcd (`pinnace up --etcd-servers`), which must answer alike."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import pytest
from tests.etcd import EtcdServer
from tests.http.conftest import Cluster, launch, stop
from tests.support import eventually

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
CM_PATH = "/api/v1/namespaces/default/configmaps"


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class HTTP:
    def __init__(self, url: str) -> None:
        parsed = urlparse(url)
        self.host, self.port = parsed.hostname or "", parsed.port or 80

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        user_agent: str = "",
    ) -> Answer:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=20)
        headers = {"Accept": accept}
        if user_agent:
            headers["User-Agent"] = user_agent
        if data is not None:
            headers["Content-Type"] = content_type
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            return Answer(response.status, response.headers, response.read())
        finally:
            connection.close()


@pytest.fixture(scope="module", params=["memory", "etcd"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    # These tests bind pods themselves and read pods as Pending: no scheduler.
    flags = ("--no-scheduler",)
    if request.param == "memory":
        running = launch(tmp_path_factory.mktemp("pinnace-up"), flags=flags)
        yield running
        stop(running)
        return
    with EtcdServer() as etcd:
        workdir = tmp_path_factory.mktemp("pinnace-up-etcd")
        storage = ("--data-dir", str(workdir / "data"), "--etcd-servers", etcd.url)
        running = launch(workdir, *storage, flags=flags)
        yield running
        stop(running)


@pytest.fixture(scope="module")
def api(cluster: Cluster) -> Iterator[HTTP]:
    yield HTTP(cluster.url)


def status_of(answer: Answer) -> tuple[int, str, str]:
    body = answer.json()
    assert body["kind"] == "Status" and body["code"] == answer.status
    return answer.status, body["reason"], body["message"]


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_unknown_paths_and_methods(api: HTTP) -> None:
    assert status_of(api.request("GET", "/api/v1/widgets")) == (
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
    assert status_of(api.request("GET", "/apis/nothing.example.com/v1"))[0] == 404
    assert status_of(api.request("PUT", CM_PATH, cm("x")))[:2] == (405, "MethodNotAllowed")
    assert status_of(api.request("POST", "/api/v1/configmaps", cm("x")))[0] == 405
    # kube-apiserver serves no deletecollection on namespaces.
    assert status_of(api.request("DELETE", "/api/v1/namespaces"))[0] == 405
    assert api.request("GET", "/api/v1/namespaces/default").status == 200


def test_bodies_that_cannot_be_read(api: HTTP) -> None:
    code, reason, message = status_of(api.request("POST", CM_PATH, b'{"metadata": '))
    assert (code, reason) == (400, "BadRequest")
    assert "json parse error: unexpected end of JSON input" in message
    unsupported = api.request("POST", CM_PATH, b"x", content_type="text/plain")
    assert status_of(unsupported)[:2] == (415, "UnsupportedMediaType")
    too_large = api.request("POST", CM_PATH, b"{" + b" " * (3 * 1024 * 1024) + b"}")
    assert status_of(too_large) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    )
    assert status_of(api.request("GET", CM_PATH, accept="application/xml"))[0] == 406
    unanswerable = api.request("POST", CM_PATH, cm("unanswered"), accept="application/xml")
    assert status_of(unanswerable)[0] == 406
    assert api.request("GET", CM_PATH + "/unanswered").status == 404


def test_field_validation_warns_or_refuses_unknown_fields(api: HTTP) -> None:
    body = {**cm("warned", a="1"), "extra": True}
    warned = api.request("POST", CM_PATH, body)
    assert warned.status == 201
    assert warned.headers.get_all("Warning") == ['299 - "unknown field \\"extra\\""']
    strict = api.request(
        "POST", CM_PATH + "?fieldValidation=Strict", {**body, "metadata": {"name": "strict"}}
    )
    assert status_of(strict) == (
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "extra"',
    )
    ignored = api.request(
        "POST", CM_PATH + "?fieldValidation=Ignore", {**body, "metadata": {"name": "ignored"}}
    )
    assert ignored.status == 201 and ignored.headers.get_all("Warning") is None


def test_field_validation_warns_about_or_refuses_duplicate_fields(api: HTTP) -> None:
    def body(name: str) -> bytes:
        return (
            b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},'
            b'"data":{"a":"1","a":"2"},"data":{"b":"3"}}' % name.encode()
        )

    warned = api.request("POST", CM_PATH, body("dup-warned"))
    assert warned.status == 201
    assert warned.headers.get_all("Warning") == [
        '299 - "duplicate field \\"data.a\\""',
        '299 - "duplicate field \\"data\\""',
    ]
    assert warned.json()["data"] == {"b": "3"}  # the last one, as Go reads it
    strict = api.request("POST", CM_PATH + "?fieldValidation=Strict", body("dup-strict"))
    assert status_of(strict) == (
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "data.a", duplicate field "data"',
    )
    assert api.request("GET", CM_PATH + "/dup-strict").status == 404
    ignored = api.request("POST", CM_PATH + "?fieldValidation=Ignore", body("dup-ignored"))
    assert ignored.status == 201 and ignored.headers.get_all("Warning") is None


def test_an_unknown_field_with_control_characters_is_warned_about_escaped(api: HTTP) -> None:
    # The field name is quoted as Go's strconv.Quote does, so the header stays valid and the
    # client gets its answer (the write is committed either way).
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"odd"},"x\x7f\\n\\"":1}'
    warned = api.request("POST", CM_PATH, body)
    assert warned.status == 201
    assert warned.headers.get_all("Warning") == ['299 - "unknown field \\"x\\\\x7f\\\\n\\\\\\"\\""']
    assert api.request("GET", CM_PATH + "/odd").status == 200


def test_bodies_go_reads_and_python_would_not(api: HTTP) -> None:
    # Go's decoder makes a lone surrogate U+FFFD, and skips an unknown field whatever number
    # it holds; a number no float64 holds, in a typed field, is its type error. go-yaml reads
    # such a number as text.
    head = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":'
    lone = api.request("POST", CM_PATH, head + b'"lone"},"data":{"a":"x\\ud800y"}}')
    assert lone.status == 201 and lone.json()["data"] == {"a": "x\ufffdy"}
    digits = b"1" * 100_000
    huge = api.request("POST", CM_PATH, head + b'"huge"},"extra":' + digits + b"}")
    assert huge.status == 201
    assert huge.headers.get_all("Warning") == ['299 - "unknown field \\"extra\\""']
    typed = api.request("POST", CM_PATH, head + b'"typed","generation":1e400}}')
    code, reason, message = status_of(typed)
    assert (code, reason) == (400, "BadRequest")
    assert message.endswith(
        "json: cannot unmarshal number 1e400 into Go struct field "
        "ObjectMeta.metadata.generation of type int64"
    )
    yaml = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: huge-yaml}\nextra: " + digits
    huge = api.request("POST", CM_PATH, yaml, content_type="application/yaml")
    assert huge.status == 201
    assert huge.headers.get_all("Warning") == ['299 - "unknown field \\"extra\\""']


def test_a_json_patch_of_a_number_beyond_float64_into_an_unknown_field_is_warned_about(
    api: HTTP,
) -> None:
    # json-patch keeps the number's text, and the patched object's unknown field is dropped
    # with a warning, as for a create; the patch is applied to a copy of the body.
    assert api.request("POST", CM_PATH, cm("patched-huge")).status == 201
    patch = b'[{"op":"add","path":"/extra","value":' + b"9" * 5000 + b"}]"
    patched = api.request(
        "PATCH", CM_PATH + "/patched-huge", patch, content_type="application/json-patch+json"
    )
    assert patched.status == 200
    assert patched.headers.get_all("Warning") == ['299 - "unknown field \\"extra\\""']


def test_dry_run_stores_nothing(api: HTTP) -> None:
    answer = api.request("POST", CM_PATH + "?dryRun=All", cm("dry"))
    assert answer.status == 201 and answer.json()["metadata"]["name"] == "dry"
    assert api.request("GET", CM_PATH + "/dry").status == 404
    bad = api.request("POST", CM_PATH + "?dryRun=Some", cm("dry"))
    assert status_of(bad)[:2] == (422, "Invalid")


def test_conflicts_and_preconditions(api: HTTP) -> None:
    created = api.request("POST", CM_PATH, cm("versioned", a="1")).json()
    assert api.request("POST", CM_PATH, cm("versioned")).status == 409
    updated = {**created, "data": {"a": "2"}}
    assert api.request("PUT", CM_PATH + "/versioned", updated).status == 200
    code, reason, message = status_of(api.request("PUT", CM_PATH + "/versioned", updated))
    assert (code, reason) == (409, "Conflict")
    assert message == (
        'Operation cannot be fulfilled on configmaps "versioned": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    precondition = {"preconditions": {"uid": "not-the-uid"}}
    refused = api.request("DELETE", CM_PATH + "/versioned", precondition)
    assert status_of(refused)[:2] == (409, "Conflict")
    done = api.request("DELETE", CM_PATH + "/versioned", {"propagationPolicy": "Background"})
    assert done.status == 200 and done.json()["status"] == "Success"


def test_patch_types(api: HTTP) -> None:
    api.request("POST", CM_PATH, cm("patched", a="1"))
    path = CM_PATH + "/patched"
    merge = api.request("PATCH", path, {"data": {"b": "2"}}, "application/merge-patch+json")
    assert merge.json()["data"] == {"a": "1", "b": "2"}
    ops = [{"op": "remove", "path": "/data/a"}]
    assert api.request("PATCH", path, ops, "application/json-patch+json").json()["data"] == {
        "b": "2"
    }
    smp = api.request("PATCH", path, {"data": {"c": "3"}}, "application/strategic-merge-patch+json")
    assert smp.json()["data"] == {"b": "2", "c": "3"}
    failing = [{"op": "test", "path": "/data/b", "value": "nope"}]
    assert status_of(api.request("PATCH", path, failing, "application/json-patch+json"))[0] == 422
    assert status_of(api.request("PATCH", path, {}, "application/json"))[0] == 415
    applied = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: patched\ndata:\n  d: '4'\n"
    ssa = api.request(
        "PATCH", path + "?fieldManager=tester", applied, "application/apply-patch+yaml"
    )
    assert ssa.status == 200 and ssa.json()["data"]["d"] == "4"
    managers = {e.get("manager"): e["operation"] for e in ssa.json()["metadata"]["managedFields"]}
    assert managers["tester"] == "Apply"
    unnamed = api.request("PATCH", path, applied, "application/apply-patch+yaml")
    assert status_of(unnamed)[:2] == (422, "Invalid")


def test_a_strategic_deletion_list_for_an_absent_list_adds_nothing(api: HTTP) -> None:
    api.request("POST", CM_PATH, cm("no-finalizers"))
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x.io/gone"]}}
    smp = "application/strategic-merge-patch+json"
    patched = api.request("PATCH", CM_PATH + "/no-finalizers", patch, smp)
    assert patched.status == 200
    assert "finalizers" not in patched.json()["metadata"]


def test_a_get_at_an_older_resource_version_reads_the_latest(api: HTTP) -> None:
    created = api.request("POST", CM_PATH, cm("versioned", v="1")).json()
    path = CM_PATH + "/versioned"
    api.request("PATCH", path, {"data": {"v": "2"}}, "application/merge-patch+json")
    rv = created["metadata"]["resourceVersion"]
    assert api.request("GET", f"{path}?resourceVersion={rv}").json()["data"] == {"v": "2"}


def test_discovery_documents(api: HTTP) -> None:
    aggregated = api.request("GET", "/apis", accept=AGGREGATED + ",application/json")
    assert aggregated.headers["Content-Type"] == AGGREGATED
    groups = [item["metadata"]["name"] for item in aggregated.json()["items"]]
    assert groups[0] == "apps" and "batch" in groups
    legacy = api.request("GET", "/api").json()
    assert legacy["kind"] == "APIVersions" and legacy["versions"] == ["v1"]
    resources = api.request("GET", "/apis/apps/v1").json()
    assert resources["groupVersion"] == "apps/v1"
    assert "deployments/scale" in {r["name"] for r in resources["resources"]}
    assert api.request("GET", "/apis/apps").json()["preferredVersion"]["version"] == "v1"


def test_health_version_and_openapi(api: HTTP) -> None:
    assert api.request("GET", "/healthz").body == b"ok"
    verbose = api.request("GET", "/readyz?verbose").body.decode()
    assert verbose.startswith("[+]ping ok\n") and verbose.endswith("readyz check passed\n")
    assert api.request("GET", "/livez/ping").body == b"ok"
    version = api.request("GET", "/version").json()
    assert version["gitVersion"].startswith("v1.32.")
    index = api.request("GET", "/openapi/v3").json()
    assert "api/v1" in index["paths"]
    assert api.request("GET", "/openapi/v3/api/v1").status == 200
    hashed = index["paths"]["api/v1"]["serverRelativeURL"]
    assert api.request("GET", hashed).headers["Cache-Control"] == "public, immutable"
    moved = api.request("GET", "/openapi/v3/api/v1?hash=OLD")
    assert (moved.status, moved.headers["Location"]) == (301, hashed)
    assert api.request("GET", "/openapi/v2").json()["swagger"] == "2.0"
    protobuf_only = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    protobuf = api.request("GET", "/openapi/v2", accept=protobuf_only)
    assert protobuf.status == 200
    assert protobuf.headers["Content-Type"] == (
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    )
    assert protobuf.body.startswith(b"\x0a\x032.0")  # field 1, swagger: "2.0"
    assert api.request("GET", "/openapi/v2", accept="application/xml").status == 406


def test_people_get_indented_json(api: HTTP) -> None:
    # kube-apiserver's negotiation picks the pretty JSON serializer (MarshalIndent: two
    # spaces, no final newline) for `?pretty=true`, `Accept: …;pretty=1`, and for curl, Wget
    # and browsers unless they say `pretty=false`.
    api.request("POST", CM_PATH, cm("shown", a="1"))
    path = CM_PATH + "/shown"
    compact = api.request("GET", path)
    obj = compact.json()
    indented = json.dumps(obj, indent=2).encode()
    assert compact.body == json.dumps(obj, separators=(",", ":")).encode() + b"\n"
    assert api.request("GET", path + "?pretty=true").body == indented
    assert api.request("GET", path, accept="application/json;pretty=1").body == indented
    assert api.request("GET", path, user_agent="curl/8.5.0").body == indented
    assert api.request("GET", path, user_agent="Mozilla/5.0 (X11)").body == indented
    assert api.request("GET", path + "?pretty=0", user_agent="curl/8.5.0").body == compact.body
    missing = api.request("GET", CM_PATH + "/absent", user_agent="Wget/1.21")
    assert missing.status == 404
    assert missing.body == json.dumps(missing.json(), indent=2).encode()
    listed = api.request("GET", CM_PATH + "?pretty=1&labelSelector=a%3D1", accept=TABLE)
    assert listed.json()["kind"] == "Table"
    assert listed.body == json.dumps(listed.json(), indent=2).encode()
    # A watch stays one event a line.
    watched = api.request("GET", CM_PATH + "?watch=1&timeoutSeconds=1&pretty=1")
    lines = watched.body.splitlines()
    assert lines and all(json.loads(line)["type"] == "ADDED" for line in lines)


def test_tables_and_partial_metadata(api: HTTP) -> None:
    api.request("POST", CM_PATH, cm("tabled", a="1", b="2"))
    table = api.request("GET", CM_PATH + "/tabled", accept=TABLE).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["tabled", 2]
    partial = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
    listed = api.request("GET", CM_PATH, accept=partial).json()
    assert listed["kind"] == "PartialObjectMetadataList"
    assert "data" not in listed["items"][0]
    refused = api.request("GET", CM_PATH + "/tabled", accept=partial)
    assert status_of(refused)[:2] == (406, "NotAcceptable")


def test_watch_stream_lines(api: HTTP) -> None:
    api.request("POST", "/api/v1/namespaces/kube-system/configmaps", cm("streamed"))
    answer = api.request(
        "GET", "/api/v1/namespaces/kube-system/configmaps?watch=true&timeoutSeconds=1"
    )
    assert answer.status == 200
    events = [json.loads(line) for line in answer.body.splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "kube-root-ca.crt"),  # the root CA publisher's, in every namespace
        ("ADDED", "streamed"),
    ]
    bad = api.request("GET", CM_PATH + "?watch=true&resourceVersionMatch=Exact")
    assert status_of(bad)[:2] == (422, "Invalid")
    # A watch of one object takes a field selector only if it names that object.
    one = "/api/v1/watch/namespaces/kube-system/configmaps/streamed?timeoutSeconds=1"
    named = api.request("GET", one + "&fieldSelector=metadata.name%3Dstreamed")
    assert [json.loads(line)["type"] for line in named.body.splitlines()] == ["ADDED"]
    mismatch = "fieldSelector metadata.name doesn't match requested name"
    for selector in ("metadata.name%3Dother", "metadata.namespace%3Dkube-system"):
        answer = api.request("GET", one + "&fieldSelector=" + selector)
        assert status_of(answer) == (400, "BadRequest", mismatch)
    unknown = api.request("GET", one + "&fieldSelector=data.x%3Dy")
    assert status_of(unknown)[:2] == (400, "BadRequest")
    assert "not a known field selector" in status_of(unknown)[2]


def test_objects_come_with_their_fields_in_kube_apiservers_order(api: HTTP) -> None:
    # Go writes a struct's fields in their declared order: TypeMeta, ObjectMeta, spec, status.
    # The default namespace is written by Pinnace's own bootstrap, the ConfigMap by a client
    # that sent metadata first and no type at all.
    namespace = api.request("GET", "/api/v1/namespaces/default")
    assert list(namespace.json()) == ["kind", "apiVersion", "metadata", "spec", "status"]
    body = {"data": {"a": "1"}, "metadata": {"name": "ordered"}}
    created = api.request("POST", CM_PATH, body)
    assert created.body.startswith(b'{"kind":"ConfigMap","apiVersion":"v1","metadata":{')
    assert list(created.json()) == ["kind", "apiVersion", "metadata", "data"]
    one = "/api/v1/watch/namespaces/default/configmaps/ordered?timeoutSeconds=1"
    [event] = [json.loads(line) for line in api.request("GET", one).body.splitlines()]
    assert list(event) == ["type", "object"]
    assert list(event["object"]) == ["kind", "apiVersion", "metadata", "data"]


def test_a_built_in_lists_items_have_no_kind_or_api_version(api: HTTP) -> None:
    # kube-apiserver converts a list's items to the external type with an empty TypeMeta
    # (kubernetes/kubernetes#3030): kubectl and client-go type them from the list's kind.
    api.request("POST", CM_PATH, cm("untyped-item"))
    listed = api.request("GET", CM_PATH + "?fieldSelector=metadata.name%3Duntyped-item").json()
    assert (listed["kind"], listed["apiVersion"]) == ("ConfigMapList", "v1")
    assert [list(item) for item in listed["items"]] == [["metadata", "data"]]


def test_a_quiet_watch_gets_a_bookmark_before_its_timeout(api: HTTP) -> None:
    # kube-apiserver's cacher sends a watch that asked for bookmarks one every minute and
    # one 2 s before its timeout, at the revision it has seen: a watch whose selector
    # matched nothing resumes from there, not from a revision compaction may have passed.
    listed = api.request("GET", CM_PATH + "?labelSelector=quiet%3Dyes").json()
    written = api.request("POST", CM_PATH, cm("noise")).json()["metadata"]["resourceVersion"]
    start = listed["metadata"]["resourceVersion"]
    since = f"?watch=1&labelSelector=quiet%3Dyes&resourceVersion={start}"
    answer = api.request("GET", CM_PATH + since + "&allowWatchBookmarks=true&timeoutSeconds=3")
    events = [json.loads(line) for line in answer.body.splitlines()]
    assert [e["type"] for e in events] == ["BOOKMARK"]
    assert (events[0]["object"]["kind"], events[0]["object"]["apiVersion"]) == ("ConfigMap", "v1")
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(written)
    plain = api.request("GET", CM_PATH + since + "&timeoutSeconds=3")
    assert plain.body == b""


def test_deletecollection_by_label(api: HTTP) -> None:
    for name in ("gone-1", "gone-2"):
        api.request("POST", CM_PATH, {**cm(name), "metadata": {"name": name, "labels": {"x": "y"}}})
    answer = api.request("DELETE", CM_PATH + "?labelSelector=x%3Dy")
    assert answer.status == 200
    assert sorted(i["metadata"]["name"] for i in answer.json()["items"]) == ["gone-1", "gone-2"]
    assert api.request("GET", CM_PATH + "?labelSelector=x%3Dy").json()["items"] == []


POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "bound", "labels": {"app": "bound"}},
    "spec": {"containers": [{"name": "main", "image": "nginx"}]},
}
PODS = "/api/v1/namespaces/default/pods"


def test_binding_checks_gates_and_preconditions(api: HTTP) -> None:
    gated = {**POD, "metadata": {"name": "gated"}}
    gated["spec"] = {**POD["spec"], "schedulingGates": [{"name": "example.com/wait"}]}
    uid = api.request("POST", PODS, gated).json()["metadata"]["uid"]
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "gated", "uid": "0000-other"},
        "target": {"kind": "Node", "name": "node-1"},
    }
    answer = api.request("POST", PODS + "/gated/binding", binding)
    assert status_of(answer)[:2] == (409, "Conflict")
    assert answer.json()["message"].endswith(
        f"UID in precondition: 0000-other, UID in object meta: {uid}"
    )
    binding["metadata"]["uid"] = uid
    assert status_of(api.request("POST", PODS + "/gated/binding", binding)) == (
        409,
        "Conflict",
        'Operation cannot be fulfilled on pods/binding "gated": '
        "pod gated has non-empty .spec.schedulingGates",
    )
    assert api.request("DELETE", PODS + "/gated").status == 200


def test_pod_subresources(api: HTTP) -> None:
    assert api.request("POST", PODS, POD).status == 201
    logs = api.request("GET", PODS + "/bound/log")
    assert (logs.status, logs.body) == (200, b"")  # not on a node yet: an empty log
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "bound"},
        "target": {"kind": "Node", "name": "node-1"},
    }
    # The create handler fills in a Status' code: the 201 it answers with.
    bound = api.request("POST", PODS + "/bound/binding", binding)
    assert (bound.status, bound.json()) == (
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
    again = api.request("POST", PODS + "/bound/binding", binding)
    assert status_of(again)[:2] == (409, "Conflict")
    status_patch = {"status": {"phase": "Running"}}
    patched = api.request(
        "PATCH", PODS + "/bound/status", status_patch, "application/merge-patch+json"
    )
    assert patched.json()["status"]["phase"] == "Running"
    assert api.request("GET", PODS + "/bound/status").json()["spec"]["nodeName"] == "node-1"
    eviction = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "bound", "namespace": "default"},
    }
    evicted = api.request("POST", PODS + "/bound/eviction", eviction)
    assert evicted.status == 201
    assert (evicted.json()["status"], evicted.json()["code"]) == ("Success", 201)
    # Streams are WebSocket or SPDY upgrades (tests/http/test_streaming.py, test_spdy_exec.py);
    # kube-apiserver's proxy refuses a plain request.
    plain = api.request("GET", PODS + "/bound/exec")
    assert status_of(plain) == (400, "BadRequest", "Upgrade request required")
    # pods/proxy (tests/http/test_proxy_subresources.py) dials the pod's IP, which no node
    # agent has given this one.
    unreachable = api.request("GET", PODS + "/bound/proxy")
    assert status_of(unreachable) == (400, "BadRequest", "address not allowed")


def test_pod_status_patches_change_the_status_alone(api: HTTP) -> None:
    pod = {**POD, "metadata": {"name": "status-only"}, "spec": {**POD["spec"], "nodeName": "n"}}
    assert api.request("POST", PODS, pod).status == 201
    path = PODS + "/status-only/status"
    for phase, content_type in (
        ("Running", "application/merge-patch+json"),
        ("Succeeded", "application/strategic-merge-patch+json"),
    ):
        patch = {
            "spec": {"containers": [{"name": "main", "image": "other"}]},
            "status": {"phase": phase, "podIP": "10.0.0.7", "podIPs": [{"ip": "10.0.0.7"}]},
        }
        patched = api.request("PATCH", path, patch, content_type).json()
        assert patched["spec"] == api.request("GET", PODS + "/status-only").json()["spec"]
        assert patched["spec"]["containers"][0]["image"] == "nginx"
        assert patched["status"]["phase"] == phase
        assert patched["status"]["podIPs"] == [{"ip": "10.0.0.7"}]
    wrong = {"spec": {"containers": "main"}}
    code, reason, message = status_of(
        api.request("PATCH", path, wrong, "application/merge-patch+json")
    )
    assert (code, reason) == (422, "Invalid")
    assert message.endswith(
        '": json: cannot unmarshal string into Go struct field PodSpec.spec.containers of '
        "type []v1.Container"
    )
    bad_ip = {"status": {"podIPs": [{"ip": "10.0.0.256"}]}}
    code, reason, message = status_of(
        api.request("PATCH", path, bad_ip, "application/merge-patch+json")
    )
    assert (code, reason) == (422, "Invalid")
    assert 'status.podIPs[0]: Invalid value: "10.0.0.256": must be a valid IP address' in message


def test_scale_subresource(api: HTTP) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "scaled"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "scaled"}},
            "template": {
                "metadata": {"labels": {"app": "scaled"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }
    path = "/apis/apps/v1/namespaces/default/deployments"
    assert api.request("POST", path, deployment).status == 201
    scale = api.request("GET", path + "/scaled/scale").json()
    assert (scale["kind"], scale["spec"]) == ("Scale", {"replicas": 1})
    patched = api.request(
        "PATCH", path + "/scaled/scale", {"spec": {"replicas": 3}}, "application/merge-patch+json"
    )
    assert patched.json()["spec"] == {"replicas": 3}
    assert api.request("GET", path + "/scaled").json()["spec"]["replicas"] == 3
    negative = {**scale, "spec": {"replicas": -1}}
    code, reason, message = status_of(api.request("PUT", path + "/scaled/scale", negative))
    assert (code, reason) == (422, "Invalid")
    assert message.startswith('Scale.autoscaling "scaled" is invalid: spec.replicas')


APPLY = "application/apply-patch+yaml"


def test_server_side_apply_of_a_scale(api: HTTP) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "applied-scale"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "applied-scale"}},
            "template": {
                "metadata": {"labels": {"app": "applied-scale"}},
                "spec": {"containers": [{"name": "main", "image": "nginx"}]},
            },
        },
    }
    path = "/apis/apps/v1/namespaces/default/deployments"
    owner = "?fieldManager=owner"
    applied = api.request("PATCH", f"{path}/applied-scale{owner}", deployment, APPLY)
    assert applied.status == 201
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "applied-scale"}}
    five = {**scale, "spec": {"replicas": 5}}
    unnamed = api.request("PATCH", f"{path}/applied-scale/scale", five, APPLY)
    assert status_of(unnamed) == (
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
        "is required for apply patch",
    )
    scaler = f"{path}/applied-scale/scale?fieldManager=scaler"
    code, reason, message = status_of(api.request("PATCH", scaler, five, APPLY))
    assert (code, reason) == (409, "Conflict")
    assert message == ('Apply failed with 1 conflict: conflict with "owner": .spec.replicas')
    forced = api.request("PATCH", scaler + "&force=true", five, APPLY)
    assert (forced.json()["kind"], forced.json()["spec"]) == ("Scale", {"replicas": 5})
    stored = api.request("GET", f"{path}/applied-scale").json()
    assert stored["spec"]["replicas"] == 5
    entries = {
        (e["manager"], e["operation"], e.get("subresource", "")): e["fieldsV1"]
        for e in stored["metadata"]["managedFields"]
    }
    assert entries[("scaler", "Apply", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entries[("owner", "Apply", "")]["f:spec"]
    # A Scale applied without replicas asks for none: the count stays (Go's zero value is
    # omitted from the applied configuration, not applied as 0).
    other = f"{path}/applied-scale/scale?fieldManager=other"
    unchanged = api.request("PATCH", other, scale, APPLY)
    assert (unchanged.status, unchanged.json()["spec"]) == (200, {"replicas": 5})


def test_patches_are_checked_for_unknown_fields(api: HTTP) -> None:
    api.request("POST", CM_PATH, cm("patched-fields", a="1"))
    path = CM_PATH + "/patched-fields"
    merge = "application/merge-patch+json"
    warned = api.request("PATCH", path, {"extra": 1, "data": {"b": "2"}}, merge)
    assert warned.status == 200 and warned.json()["data"] == {"a": "1", "b": "2"}
    assert warned.headers.get_all("Warning") == ['299 - "unknown field \\"extra\\""']
    strict = api.request("PATCH", path + "?fieldValidation=Strict", {"extra": 1}, merge)
    assert status_of(strict)[:2] == (422, "Invalid")
    assert strict.json()["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    assert strict.json()["message"].endswith('": strict decoding error: unknown field "extra"')


def test_an_eviction_a_budget_forbids_is_429_with_retry_after(api: HTTP) -> None:
    pod = {**POD, "metadata": {"name": "guarded", "labels": {"app": "guarded"}}}
    assert api.request("POST", PODS, pod).status == 201
    binding = {"metadata": {"name": "guarded"}, "target": {"kind": "Node", "name": "node-1"}}
    assert api.request("POST", PODS + "/guarded/binding", binding).status == 201
    running = {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    api.request("PATCH", PODS + "/guarded/status", running, "application/merge-patch+json")
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guard"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    budgets = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
    assert api.request("POST", budgets, budget).status == 201
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "guarded"}}

    def processed() -> Answer:
        """The eviction's answer once the disruption controller has processed the budget."""
        refused = api.request("POST", PODS + "/guarded/eviction", eviction)
        assert refused.headers.get("Retry-After") != "10", "still being processed: retry in 10 s"
        return refused

    refused = eventually(processed, timeout=10)
    assert "Retry-After" not in refused.headers
    assert status_of(refused)[:2] == (429, "TooManyRequests")
    causes = json.loads(refused.body)["details"]["causes"]
    assert causes == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget guard needs 1 healthy pods and has 1 currently",
        }
    ]
    assert api.request("GET", PODS + "/guarded").status == 200


def test_yaml_when_asked_for(api: HTTP) -> None:
    api.request("POST", CM_PATH, cm("in-yaml", a="1"))
    answer = api.request("GET", CM_PATH + "/in-yaml", accept="application/yaml")
    assert answer.headers["Content-Type"] == "application/yaml"
    text = answer.body.decode()
    assert "kind: ConfigMap\n" in text and "data:\n  a: '1'\n" in text
    posted = api.request(
        "POST",
        CM_PATH,
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  b: '2'\n",
        content_type="application/yaml",
    )
    assert posted.status == 201 and posted.json()["data"] == {"b": "2"}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"a: &a [*a]\n", "exceeded max depth"),
        (b"[" * 5000 + b"]" * 5000, "exceeded max depth"),
        (
            b"a0: &a0 [x,x,x,x,x,x,x,x,x]\n"
            + b"".join(
                f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n".encode() for i in range(1, 9)
            ),
            "document contains excessive aliasing",
        ),
    ],
)
def test_hostile_yaml_is_a_400(api: HTTP, body: bytes, why: str) -> None:
    code, reason, message = status_of(api.request("POST", CM_PATH, body, "application/yaml"))
    assert (code, reason) == (400, "BadRequest")
    assert message.startswith("the object provided is unrecognized (must be of type ConfigMap): ")
    assert f"error converting YAML to JSON: yaml: {why} (" in message


def test_apply_reads_yaml_as_kubernetes_does(api: HTTP) -> None:
    applied = (
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\n"
        b"  annotations:\n    released: 2024-01-01\ndata:\n  a: '1'\n"
    )
    path = CM_PATH + "/dated?fieldManager=tester"
    created = api.request("PATCH", path, applied, "application/apply-patch+yaml")
    assert created.status == 201
    assert created.json()["metadata"]["annotations"] == {"released": "2024-01-01"}
    hostile = api.request("PATCH", path, b"a: &a [*a]\n", "application/apply-patch+yaml")
    assert status_of(hostile)[:2] == (400, "BadRequest")


def test_a_patch_nested_too_deeply_is_a_400(api: HTTP) -> None:
    """A body that parses (under the decoder's 1,024 levels) but nests deeper than the merge
    can walk (Python's 1,000 frames, one a level) is refused, not a traceback."""
    api.request("POST", CM_PATH, cm("nested"))
    deep = b'{"extra":' + b'{"x":' * 1010 + b"{}" + b"}" * 1010 + b"}"
    answer = api.request("PATCH", CM_PATH + "/nested", deep, "application/merge-patch+json")
    assert status_of(answer) == (400, "BadRequest", "the request is nested too deeply to process")


def test_no_pods_resize_without_its_feature_gate(api: HTTP) -> None:
    resources = api.request("GET", "/api/v1").json()["resources"]
    names = {r["name"] for r in resources}
    assert "pods/status" in names
    assert "pods/resize" not in names
    patch = {"spec": {"containers": [{"name": "app", "resources": {}}]}}
    answer = api.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/nobody/resize",
        patch,
        content_type="application/strategic-merge-patch+json",
    )
    assert answer.status == 404
    assert answer.json()["message"] == "the server could not find the requested resource"
