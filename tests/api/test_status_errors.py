"""Status errors carry the code, reason and message kube-apiserver sends."""

from pinnace.api import field, status


def test_not_found_names_the_group_qualified_resource() -> None:
    err = status.not_found("deployments", "web", group="apps")
    assert err.code == 404
    assert err.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "web" not found',
        "reason": "NotFound",
        "details": {"name": "web", "group": "apps", "kind": "deployments"},
        "code": 404,
    }


def test_conflict_on_a_stale_resource_version() -> None:
    err = status.conflict("pods", "p", status.STALE_RESOURCE_VERSION)
    assert (err.code, err.reason) == (409, "Conflict")
    assert err.message == (
        'Operation cannot be fulfilled on pods "p": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_already_exists() -> None:
    err = status.already_exists("pods", "p")
    assert (err.code, err.reason, err.message) == (409, "AlreadyExists", 'pods "p" already exists')


def test_invalid_lists_causes_naming_fields() -> None:
    errors = [
        field.required("spec.containers[0].image"),
        field.invalid("spec.containers[0].name", "A", "must be lowercase"),
    ]
    err = status.invalid("Pod", "p", errors)
    body = err.status()
    assert body["code"] == 422
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        'Pod "p" is invalid: [spec.containers[0].image: Required value, '
        'spec.containers[0].name: Invalid value: "A": must be lowercase]'
    )
    assert body["details"]["kind"] == "Pod"
    assert [c["field"] for c in body["details"]["causes"]] == [
        "spec.containers[0].image",
        "spec.containers[0].name",
    ]


def test_invalid_in_a_named_group() -> None:
    err = status.invalid("Deployment", "web", [field.required("spec.selector")], group="apps")
    assert err.message == 'Deployment.apps "web" is invalid: spec.selector: Required value'


def test_forbidden_quota_message() -> None:
    err = status.forbidden(
        "pods", "p", "exceeded quota: q, requested: cpu=2, used: cpu=1, limited: cpu=2"
    )
    assert err.code == 403
    assert err.message.startswith('pods "p" is forbidden: exceeded quota: q')


def test_other_codes() -> None:
    assert status.bad_request("bad").code == 400
    assert status.request_entity_too_large(3 * 1024 * 1024).message == (
        "Request entity too large: limit is 3145728"
    )
    assert status.resource_expired("too old resource version: 1 (5)").status()["code"] == 410
    assert status.too_many_requests("no", 10).status()["details"] == {"retryAfterSeconds": 10}
    assert status.internal_error("boom").message == "Internal error occurred: boom"


def test_a_status_lists_its_fields_in_metav1_status_order() -> None:
    err = status.invalid("Pod", "p", [field.required("spec.containers")])
    body = err.status()
    assert list(body) == [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ]
    assert list(body["details"]) == ["name", "kind", "causes"]
    assert list(body["details"]["causes"][0]) == ["reason", "message", "field"]


def test_an_internal_error_carries_its_cause_as_new_internal_error_does() -> None:
    assert status.internal_error("boom").status()["details"] == {"causes": [{"message": "boom"}]}


def test_empty_details_are_sent_as_an_empty_object() -> None:
    assert status.StatusError(404, "NotFound", "gone", {}).status()["details"] == {}
