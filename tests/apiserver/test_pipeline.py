"""The request pipeline as a client sees it: what is stored, what is refused, and how."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.options import DeleteOptions, ListOptions, WriteOptions, encode_continue
from pinnace.api.status import StatusError
from pinnace.client import LocalClient, PatchType

PODS = catalog.kind("", "pods")
CONFIGMAPS = catalog.kind("", "configmaps")
NAMESPACES = catalog.kind("", "namespaces")
NODES = catalog.kind("", "nodes")
DEPLOYMENTS = catalog.kind("apps", "deployments")


def pod(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}], **spec},
    }


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def error(api: Any, fn: Any, *args: Any) -> StatusError:
    with pytest.raises(StatusError) as e:
        api.call(fn, *args)
    return e.value


def test_create_sets_server_fields_and_defaults(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod()).obj
    m = created["metadata"]
    assert m["namespace"] == "default"
    assert str(uuid.UUID(m["uid"])) == m["uid"] and uuid.UUID(m["uid"]).version == 4
    assert m["creationTimestamp"].endswith("Z")
    assert int(m["resourceVersion"]) > 0
    assert created["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert created["spec"]["priority"] == 0
    tolerations = {t["key"]: t["tolerationSeconds"] for t in created["spec"]["tolerations"]}
    assert tolerations == {
        "node.kubernetes.io/not-ready": 300,
        "node.kubernetes.io/unreachable": 300,
    }
    assert api.call(api.server.get, PODS, "default", "web") == created


def test_uid_sent_by_the_client_is_ignored(api: Any) -> None:
    body = pod()
    body["metadata"]["uid"] = "mine"
    assert api.call(api.server.create, PODS, "default", body).obj["metadata"]["uid"] != "mine"


def test_system_fields_sent_on_create_are_dropped(api: Any) -> None:
    body = cm("sent")
    body["metadata"].update(
        deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=30, selfLink="/x"
    )
    m = api.call(api.server.create, CONFIGMAPS, "default", body).obj["metadata"]
    assert not {"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} & m.keys()


def test_generate_name_appends_five_characters(api: Any) -> None:
    body = pod()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "x" * 70
    name = api.call(api.server.create, PODS, "default", body).obj["metadata"]["name"]
    assert name.startswith("x" * 58) and len(name) == 63
    assert all(c in "bcdfghjklmnpqrstvwxz2456789" for c in name[58:])


def test_existing_name_is_409_and_missing_name_is_422(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod())
    e = error(api, api.server.create, PODS, "default", pod())
    assert (e.code, e.message) == (409, 'pods "web" already exists')
    body = pod()
    del body["metadata"]["name"]
    e = error(api, api.server.create, PODS, "default", body)
    assert e.code == 422
    assert "metadata.name: Required value: name or generateName is required" in e.message


def test_namespace_of_the_body_must_match_the_url(api: Any) -> None:
    body = pod()
    body["metadata"]["namespace"] = "kube-system"
    e = error(api, api.server.create, PODS, "default", body)
    assert e.code == 400
    assert "does not match the namespace sent on the request" in e.message


def test_create_in_a_missing_namespace_is_404(api: Any) -> None:
    e = error(api, api.server.create, PODS, "nope", pod())
    assert (e.code, e.message) == (404, 'namespaces "nope" not found')


def test_invalid_pod_is_422_with_causes_and_nothing_is_stored(api: Any) -> None:
    body = pod()
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    e = error(api, api.server.create, PODS, "default", body)
    assert e.code == 422
    causes = e.details["causes"]
    assert any(c["field"] == "spec.containers[0].resources.requests" for c in causes)
    assert "must be less than or equal to cpu limit" in e.message
    assert error(api, api.server.get, PODS, "default", "web").code == 404


def test_bad_quantity_is_a_400_at_decode(api: Any) -> None:
    body = pod()
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1.5.5"}}
    assert error(api, api.server.create, PODS, "default", body).code == 400


def test_stale_update_is_409_and_exactly_one_writer_wins(api: Any) -> None:
    first = api.call(api.server.create, CONFIGMAPS, "default", cm("c", a="1")).obj
    a, b = dict(first), dict(first)
    a["data"] = {"a": "2"}
    b["data"] = {"a": "3"}
    api.call(api.server.update, CONFIGMAPS, "default", "c", a)
    e = error(api, api.server.update, CONFIGMAPS, "default", "c", b)
    assert e.code == 409
    assert e.message == (
        'Operation cannot be fulfilled on configmaps "c": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert api.call(api.server.get, CONFIGMAPS, "default", "c")["data"] == {"a": "2"}


def test_update_without_resource_version_is_unconditional(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", cm("c", a="1"))
    stored = api.call(api.server.update, CONFIGMAPS, "default", "c", cm("c", a="9")).obj
    assert stored["data"] == {"a": "9"}


def test_no_op_update_writes_nothing(api: Any) -> None:
    first = api.call(api.server.create, CONFIGMAPS, "default", cm("c", a="1")).obj
    again = api.call(api.server.update, CONFIGMAPS, "default", "c", dict(first)).obj
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_pod_spec_update_keeps_status_and_status_update_keeps_spec(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod()).obj
    new = dict(created, status={"phase": "Running", "qosClass": "BestEffort"})
    after = api.call(api.server.update, PODS, "default", "web", new).obj
    assert after["status"]["phase"] == "Pending"
    new = dict(after, status={"phase": "Running", "qosClass": "BestEffort"})
    after = api.call(api.server.update, PODS, "default", "web", new, None, "status").obj
    assert after["status"]["phase"] == "Running"


def test_delete_unbound_pod_goes_at_once(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod())
    gone = api.call(api.server.delete, PODS, "default", "web").obj
    assert gone["metadata"]["name"] == "web"
    assert error(api, api.server.get, PODS, "default", "web").code == 404


def test_a_write_between_the_mark_and_the_removal_does_not_stop_the_delete(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod())
    store = api.server.store
    remove = store.delete

    async def raced_delete(key: str, revision: int | None = None) -> Any:
        store.delete = remove
        current = await store.get(key)
        changed = {**current, "status": {"phase": "Pending", "message": "a late writer"}}
        await store.update(key, changed, int(current["metadata"]["resourceVersion"]))
        return await remove(key, revision)

    store.delete = raced_delete
    gone = api.call(api.server.delete, PODS, "default", "web").obj
    assert gone["status"]["message"] == "a late writer"
    assert error(api, api.server.get, PODS, "default", "web").code == 404


def test_bound_pod_is_deleted_gracefully_and_a_second_delete_only_shortens(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod(nodeName="n1"))
    marked = api.call(api.server.delete, PODS, "default", "web").obj
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert marked["metadata"]["deletionTimestamp"]
    longer = api.call(
        api.server.delete, PODS, "default", "web", DeleteOptions(grace_period_seconds=60)
    ).obj
    assert longer["metadata"]["deletionGracePeriodSeconds"] == 30
    shorter = api.call(
        api.server.delete, PODS, "default", "web", DeleteOptions(grace_period_seconds=5)
    ).obj
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    api.call(api.server.delete, PODS, "default", "web", DeleteOptions(grace_period_seconds=0))
    assert error(api, api.server.get, PODS, "default", "web").code == 404


def test_finalizers_hold_an_object_until_removed(api: Any) -> None:
    body = cm("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.call(api.server.create, CONFIGMAPS, "default", body)
    marked = api.call(api.server.delete, CONFIGMAPS, "default", "held").obj
    assert marked["metadata"]["deletionTimestamp"]
    released = dict(marked, metadata={**marked["metadata"], "finalizers": []})
    api.call(api.server.update, CONFIGMAPS, "default", "held", released)
    assert error(api, api.server.get, CONFIGMAPS, "default", "held").code == 404


def test_delete_with_a_stale_uid_precondition_is_409(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", cm("c"))
    e = error(
        api,
        api.server.delete,
        CONFIGMAPS,
        "default",
        "c",
        DeleteOptions(precondition_uid="other"),
    )
    assert e.code == 409
    assert e.message.startswith(
        'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (other) '
        "does not match the UID in record ("
    )


def test_list_pages_share_one_resource_version(api: Any) -> None:
    for i in range(5):
        api.call(api.server.create, CONFIGMAPS, "default", cm(f"c{i}"))
    first = api.call(api.server.list, CONFIGMAPS, "default", ListOptions(limit=2))
    token = first["metadata"]["continue"]
    api.call(api.server.create, CONFIGMAPS, "default", cm("late"))
    names = [i["metadata"]["name"] for i in first["items"]]
    rvs = {first["metadata"]["resourceVersion"]}
    while token:
        page = api.call(
            api.server.list, CONFIGMAPS, "default", ListOptions(limit=2, continue_token=token)
        )
        names += [i["metadata"]["name"] for i in page["items"]]
        rvs.add(page["metadata"]["resourceVersion"])
        token = page["metadata"].get("continue")
    assert names == ["c0", "c1", "c2", "c3", "c4"]
    assert len(rvs) == 1


def test_a_list_at_resource_version_0_is_whole_whatever_its_limit(api: Any) -> None:
    # v1.32 serves it from the watch cache, which ignores limit (cacher.go shouldDelegateList).
    for i in range(3):
        api.call(api.server.create, CONFIGMAPS, "default", cm(f"c{i}"))
    listed = api.call(
        api.server.list, CONFIGMAPS, "default", ListOptions(limit=1, resource_version="0")
    )
    assert [i["metadata"]["name"] for i in listed["items"]] == ["c0", "c1", "c2"]
    assert "continue" not in listed["metadata"]
    assert "remainingItemCount" not in listed["metadata"]


def names_in_pages(api: Any, kind: Any, namespace: str, limit: int) -> list[str]:
    names: list[str] = []
    token = ""
    while True:
        options = ListOptions(limit=limit, continue_token=token)
        page = api.call(api.server.list, kind, namespace, options)
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            return names


def test_cluster_scoped_and_all_namespace_lists_page_through(api: Any) -> None:
    # `kubectl get nodes` pages by 500: a second page of a cluster-scoped kind must be served.
    for name in ("n1", "n2", "n3"):
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
        api.call(api.server.create, NODES, "", node)
        api.call(api.server.create, CONFIGMAPS, "default", cm(f"c-{name}"))
    assert names_in_pages(api, NODES, "", 2) == ["n1", "n2", "n3"]
    configmaps = names_in_pages(api, CONFIGMAPS, "", 2)
    assert [n for n in configmaps if n.startswith("c-")] == ["c-n1", "c-n2", "c-n3"]


def test_a_continue_token_climbing_out_of_its_list_is_refused(api: Any) -> None:
    # storage.DecodeContinue: a start key that path.Clean would change is not valid.
    climbing = encode_continue(5, "../secrets/default/x")
    e = error(api, api.server.list, CONFIGMAPS, "", ListOptions(limit=1, continue_token=climbing))
    assert e.code == 400
    assert e.message == "invalid continue token: continue key is not valid: ../secrets/default/x"


def test_an_expired_continue_token_is_410_with_one_that_continues_at_the_latest(api: Any) -> None:
    """etcd3's handleCompactedErrorForPaging: the Status carries a token for the rest of the
    list at the latest revision, which later changes show in."""
    for name in ("a", "b", "c"):
        api.call(api.server.create, CONFIGMAPS, "default", cm(name))
    first = api.call(api.server.list, CONFIGMAPS, "default", ListOptions(limit=1))
    api.call(api.server.update, CONFIGMAPS, "default", "c", cm("c", v="2"))
    api.call(api.server.store.compact, api.server.store.revision)
    stale = ListOptions(limit=1, continue_token=first["metadata"]["continue"])
    e = error(api, api.server.list, CONFIGMAPS, "default", stale)
    assert (e.code, e.reason) == (410, "Expired")
    token = e.status()["metadata"]["continue"]
    rest = names_and_data(api, token)
    assert rest == [("b", {}), ("c", {"v": "2"})]


def names_and_data(api: Any, token: str) -> list[tuple[str, Any]]:
    got: list[tuple[str, Any]] = []
    while token:
        page = api.call(
            api.server.list, CONFIGMAPS, "default", ListOptions(limit=1, continue_token=token)
        )
        got += [(i["metadata"]["name"], i.get("data")) for i in page["items"]]
        token = page["metadata"].get("continue", "")
    return got


def test_a_continue_token_with_a_resource_version_is_checked_first(api: Any) -> None:
    e = error(
        api, api.server.list, CONFIGMAPS, "", ListOptions(continue_token="%%", resource_version="5")
    )
    assert e.code == 400
    assert e.message.startswith("invalid continue token: continue key is not valid")


def test_list_with_label_and_field_selectors(api: Any) -> None:
    api.call(api.server.create, PODS, "default", pod("a"))
    api.call(api.server.create, PODS, "default", pod("b", nodeName="n1"))
    by_label = api.call(api.server.list, PODS, "default", ListOptions(label_selector="app=a"))
    assert [p["metadata"]["name"] for p in by_label["items"]] == ["a"]
    by_field = api.call(api.server.list, PODS, "", ListOptions(field_selector="spec.nodeName=n1"))
    assert [p["metadata"]["name"] for p in by_field["items"]] == ["b"]
    e = error(api, api.server.list, PODS, "", ListOptions(field_selector="spec.bogus=1"))
    assert e.code == 400


def test_watch_sends_existing_objects_then_changes(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", cm("a"))

    async def scenario() -> list[tuple[str, str]]:
        stream = api.server.watch(CONFIGMAPS, "default", ListOptions())
        seen = [await anext(stream)]
        await api.server.create(CONFIGMAPS, "default", cm("b"))
        await api.server.delete(CONFIGMAPS, "default", "a")
        seen += [await anext(stream), await anext(stream)]
        await stream.aclose()
        return [(e["type"], e["object"]["metadata"]["name"]) for e in seen]

    assert api.run(scenario()) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a")]


def test_a_watch_without_initial_events_starts_from_now(api: Any) -> None:
    """sendInitialEvents=false with no resourceVersion: no ADDED for what exists, only what
    changes after the watch began (v1.32's watch cache)."""
    api.call(api.server.create, CONFIGMAPS, "default", cm("a"))
    options = ListOptions(send_initial_events=False, resource_version_match="NotOlderThan")

    async def scenario() -> list[tuple[str, str]]:
        stream = api.server.watch(CONFIGMAPS, "default", options)
        first = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)  # the watch has started
        await api.server.create(CONFIGMAPS, "default", cm("b"))
        event = await first
        await stream.aclose()
        return [(event["type"], event["object"]["metadata"]["name"])]

    assert api.run(scenario()) == [("ADDED", "b")]


def test_watch_hands_changes_at_hand_over_in_one_batch(api: Any) -> None:
    created = api.call(api.server.create, CONFIGMAPS, "default", cm("a")).obj
    options = ListOptions(resource_version=created["metadata"]["resourceVersion"])

    async def scenario() -> list[list[str]]:
        stream = api.server.watch(CONFIGMAPS, "default", options)
        batches = stream.batches()
        first = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0)  # the watch has caught up and waits for changes
        await api.server.create(CONFIGMAPS, "default", cm("b"))
        got = [await first]
        for name in ("c", "d"):
            await api.server.create(CONFIGMAPS, "default", cm(name))
        got.append(await anext(batches))
        await stream.aclose()
        return [[e["object"]["metadata"]["name"] for e in batch] for batch in got]

    assert api.run(scenario()) == [["b"], ["c", "d"]]


def test_object_leaving_a_label_selector_is_deleted_for_that_watch(api: Any) -> None:
    created = api.call(api.server.create, PODS, "default", pod("a")).obj
    rv = created["metadata"]["resourceVersion"]

    async def scenario() -> list[str]:
        stream = api.server.watch(
            PODS, "default", ListOptions(label_selector="app=a", resource_version=rv)
        )
        relabeled = dict(created, metadata={**created["metadata"], "labels": {"app": "z"}})
        await api.server.update(PODS, "default", "a", relabeled)
        event = await anext(stream)
        await stream.aclose()
        return [event["type"], event["object"]["metadata"]["labels"]["app"]]

    assert api.run(scenario()) == ["DELETED", "a"]


def test_a_live_field_selected_watch_sees_what_enters_and_leaves_its_selection(api: Any) -> None:
    """Changes a watch's selector leaves out are not handed to it at all; an object that starts
    or stops matching still is, as ADDED or DELETED."""
    events = catalog.kind("", "events")

    def event(name: str, reason: str) -> dict[str, Any]:
        involved = {"kind": "Pod", "namespace": "default", "name": name}
        return {"metadata": {"name": name}, "involvedObject": involved, "reason": reason}

    async def scenario() -> list[tuple[str, str, str]]:
        options = ListOptions(field_selector="reason=FailedScheduling")
        stream = api.server.watch(events, "default", options)
        got = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)  # listed nothing; the watch waits for live changes
        await api.server.create(events, "default", event("a", "Scheduled"))
        await api.server.create(events, "default", event("b", "FailedScheduling"))
        await api.server.update(events, "default", "b", event("b", "Scheduled"))
        await api.server.update(events, "default", "a", event("a", "FailedScheduling"))
        await api.server.delete(events, "default", "a")
        seen = [await got] + [await anext(stream) for _ in range(3)]
        await stream.aclose()
        return [(e["type"], e["object"]["metadata"]["name"], e["object"]["reason"]) for e in seen]

    assert api.run(scenario()) == [
        ("ADDED", "b", "FailedScheduling"),
        ("DELETED", "b", "FailedScheduling"),
        ("ADDED", "a", "FailedScheduling"),
        ("DELETED", "a", "FailedScheduling"),
    ]


def test_a_field_selected_watch_sends_replayed_and_live_changes_alike(api: Any) -> None:
    """A change the watch replays from history and one it takes live (whose verdict is
    worked out when the store offers it) are sent alike: MODIFIED while the object matches
    before and after, DELETED once it stops matching."""
    events = catalog.kind("", "events")

    def event(reason: str, message: str) -> dict[str, Any]:
        involved = {"kind": "Pod", "namespace": "default", "name": "a"}
        body = {"metadata": {"name": "a"}, "involvedObject": involved}
        return {**body, "reason": reason, "message": message}

    created = api.call(api.server.create, events, "default", event("FailedScheduling", "0")).obj

    async def scenario() -> list[tuple[str, str, str]]:
        rv = created["metadata"]["resourceVersion"]
        options = ListOptions(field_selector="reason=FailedScheduling", resource_version=rv)
        stream = api.server.watch(events, "default", options)
        await api.server.update(events, "default", "a", event("FailedScheduling", "1"))
        seen = [await anext(stream)]  # replayed; the watch is live from now on
        await api.server.update(events, "default", "a", event("FailedScheduling", "2"))
        await api.server.update(events, "default", "a", event("Scheduled", "3"))
        seen += [await anext(stream) for _ in range(2)]
        await stream.aclose()
        return [(e["type"], e["object"]["reason"], e["object"]["message"]) for e in seen]

    assert api.run(scenario()) == [
        ("MODIFIED", "FailedScheduling", "1"),
        ("MODIFIED", "FailedScheduling", "2"),
        ("DELETED", "FailedScheduling", "2"),
    ]


def test_watch_from_a_compacted_revision_gets_a_410_error_event(api: Any) -> None:
    first = api.call(api.server.create, CONFIGMAPS, "default", cm("a")).obj
    for i in range(3):
        api.call(api.server.update, CONFIGMAPS, "default", "a", cm("a", n=str(i)))
    api.call(api.server.store.compact, api.server.store.revision)

    async def scenario() -> dict[str, Any]:
        options = ListOptions(resource_version=first["metadata"]["resourceVersion"])
        stream = api.server.watch(CONFIGMAPS, "default", options)
        event = await anext(stream)
        await stream.aclose()
        return event

    event = api.run(scenario())
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"


def test_a_get_at_a_resource_version_is_the_latest_object(api: Any) -> None:
    """GET's resourceVersion means "not older than" (WaitUntilFreshAndGet): an older
    resourceVersion, even a compacted one, reads the object as it is now."""
    first = api.call(api.server.create, CONFIGMAPS, "default", cm("c", v="1")).obj
    api.call(api.server.update, CONFIGMAPS, "default", "c", cm("c", v="2"))
    api.call(api.server.store.compact, api.server.store.revision)
    got = api.call(api.server.get, CONFIGMAPS, "default", "c", first["metadata"]["resourceVersion"])
    assert got["data"] == {"v": "2"}


def test_dry_run_stores_nothing(api: Any) -> None:
    api.call(api.server.create, CONFIGMAPS, "default", cm("c"), WriteOptions(dry_run=True))
    assert error(api, api.server.get, CONFIGMAPS, "default", "c").code == 404


def test_a_dry_run_create_of_a_name_that_is_taken_is_409(api: Any) -> None:
    """DryRunnableStorage.Create reads the key: the create would fail, so does its dry run."""
    api.call(api.server.create, CONFIGMAPS, "default", cm("c", v="1"))
    dry = WriteOptions(dry_run=True)
    e = error(api, api.server.create, CONFIGMAPS, "default", cm("c", v="2"), dry)
    assert (e.code, e.reason, e.message) == (409, "AlreadyExists", 'configmaps "c" already exists')
    assert api.call(api.server.get, CONFIGMAPS, "default", "c")["data"] == {"v": "1"}


def test_unknown_fields_warn_or_fail_strictly(api: Any) -> None:
    body = cm("c")
    body["bogus"] = 1
    warned = api.call(api.server.create, CONFIGMAPS, "default", body)
    assert warned.warnings == ['unknown field "bogus"']
    body["metadata"]["name"] = "d"
    e = error(
        api,
        api.server.create,
        CONFIGMAPS,
        "default",
        body,
        WriteOptions(field_validation="Strict"),
    )
    assert e.code == 400 and 'strict decoding error: unknown field "bogus"' in e.message


def test_deployment_is_accepted_before_its_controller_exists(api: Any) -> None:
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    stored = api.call(api.server.create, DEPLOYMENTS, "default", body).obj
    assert stored["spec"]["replicas"] == 1
    assert stored["metadata"]["generation"] == 1


def test_system_namespaces_and_priority_classes_exist_from_the_start(api: Any) -> None:
    names = [n["metadata"]["name"] for n in api.call(api.server.list, NAMESPACES, "")["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    classes = catalog.kind("scheduling.k8s.io", "priorityclasses")
    listed = api.call(api.server.list, classes, "")["items"]
    assert {c["metadata"]["name"]: c["value"] for c in listed} == {
        "system-cluster-critical": 2000000000,
        "system-node-critical": 2000001000,
    }


def race_each_update(api: Any, change: Any, times: int = 1) -> None:
    """The store's next `times` updates each find another writer's `change` (a function of
    the stored object) landed between the server's read and its write."""
    store = api.server.store
    update = store.update
    left = [times]

    async def raced_update(key: str, obj: Any, revision: int | None) -> Any:
        if left[0]:
            left[0] -= 1
            current = await store.get(key)
            await update(key, change(current), int(current["metadata"]["resourceVersion"]))
        return await update(key, obj, revision)

    store.update = raced_update


def annotated(obj: Any) -> Any:
    count = int((obj["metadata"].get("annotations") or {}).get("writes", "0")) + 1
    return {**obj, "metadata": {**obj["metadata"], "annotations": {"writes": str(count)}}}


def test_a_patch_without_resource_version_lands_on_the_write_that_raced_it(api: Any) -> None:
    # kube-apiserver's GuaranteedUpdate applies the patch again to what was stored meanwhile.
    api.call(api.server.create, PODS, "default", pod())
    race_each_update(api, annotated, times=3)
    client = LocalClient(api.server)
    patch = {"status": {"phase": "Running"}}
    patched = api.call(
        client.patch, PODS, "default", "web", patch, PatchType.MERGE, subresource="status"
    )
    assert patched["status"]["phase"] == "Running"
    assert patched["metadata"]["annotations"] == {"writes": "3"}
    assert api.call(api.server.get, PODS, "default", "web") == patched


def test_a_patch_carrying_the_read_resource_version_is_a_409_when_a_write_races_it(
    api: Any,
) -> None:
    created = api.call(api.server.create, CONFIGMAPS, "default", cm("c", a="1")).obj
    race_each_update(api, annotated)
    client = LocalClient(api.server)
    rv = created["metadata"]["resourceVersion"]
    patch = {"metadata": {"resourceVersion": rv}, "data": {"a": "2"}}
    e = error(api, client.patch, CONFIGMAPS, "default", "c", patch, PatchType.MERGE)
    assert (e.code, e.reason) == (409, "Conflict")
    assert api.call(api.server.get, CONFIGMAPS, "default", "c")["data"] == {"a": "1"}


def test_removing_the_last_finalizer_removes_the_object_even_when_a_write_races_it(
    api: Any,
) -> None:
    body = cm("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.call(api.server.create, CONFIGMAPS, "default", body)
    api.call(api.server.delete, CONFIGMAPS, "default", "held")
    store = api.server.store
    remove = store.delete

    async def raced_delete(key: str, revision: int | None = None) -> Any:
        store.delete = remove
        current = await store.get(key)
        await store.update(key, annotated(current), int(current["metadata"]["resourceVersion"]))
        return await remove(key, revision)

    store.delete = raced_delete
    client = LocalClient(api.server)
    release = {"metadata": {"finalizers": None}}
    api.call(client.patch, CONFIGMAPS, "default", "held", release, PatchType.MERGE)
    assert error(api, api.server.get, CONFIGMAPS, "default", "held").code == 404


def running(obj: Any) -> Any:
    """A status writer's change, as the node agent makes while a pod starts."""
    return {**obj, "status": {**obj.get("status", {}), "phase": "Running"}}


@pytest.mark.parametrize(
    ("patch_type", "patch"),
    [
        (PatchType.MERGE, {"metadata": {"labels": {"tier": "web"}}}),
        (PatchType.STRATEGIC_MERGE, {"metadata": {"labels": {"tier": "web"}}}),
        (PatchType.JSON, [{"op": "add", "path": "/metadata/labels/tier", "value": "web"}]),
        (
            PatchType.APPLY,
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"tier": "web"}}},
        ),
    ],
)
def test_a_label_patch_racing_a_status_writer_succeeds(
    api: Any, patch_type: PatchType, patch: Any
) -> None:
    # kube-apiserver's patcher re-applies a patch without a resourceVersion to what the other
    # writer stored (GuaranteedUpdate): no 409 for a write that carries no precondition.
    api.call(api.server.create, PODS, "default", pod())
    race_each_update(api, running, times=3)
    options = WriteOptions(field_manager="kubectl-label", force=True)
    if patch_type is PatchType.APPLY:
        patch = {**patch, "metadata": {**patch["metadata"], "name": "web"}}
    patched = api.call(api.server.patch, PODS, "default", "web", patch_type, patch, options).obj
    assert patched["metadata"]["labels"]["tier"] == "web"
    assert patched["status"]["phase"] == "Running"


def test_a_put_without_resource_version_racing_a_status_writer_succeeds(api: Any) -> None:
    created = api.call(api.server.create, CONFIGMAPS, "default", cm("c", a="1")).obj
    race_each_update(api, annotated, times=3)
    body = cm("c", a="2")
    assert "resourceVersion" not in body["metadata"]
    updated = api.call(api.server.update, CONFIGMAPS, "default", "c", body).obj
    assert updated["data"] == {"a": "2"}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


def test_an_event_without_a_name_is_invalid(api: Any) -> None:
    # v1 Events' own validation leaves metadata alone; the registry's check still needs a name.
    event = {"apiVersion": "v1", "kind": "Event", "involvedObject": {}}
    causes = api.invalid_causes(api.server.create, catalog.kind("", "events"), "default", event)
    assert causes == ["metadata.name: Required value: name or generateName is required"]
