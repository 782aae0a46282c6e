"""NamespaceLifecycle vectors, checked against k8s.io/apiserver v1.32
(pkg/admission/plugin/namespace/lifecycle/admission.go)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.api.status import StatusError
from pinnace.apiserver.admission.errors import object_name
from pinnace.apiserver.admission.namespace_lifecycle import IMMORTAL_NAMESPACES, check

ACTIVE = {"metadata": {"name": "team"}, "status": {"phase": "Active"}}
TERMINATING = {
    "metadata": {"name": "team", "deletionTimestamp": "2025-01-01T00:00:00Z"},
    "status": {"phase": "Terminating"},
}


def refusal(*args: Any, **kwargs: Any) -> StatusError:
    with pytest.raises(StatusError) as info:
        check(*args, **kwargs)
    return info.value


def test_immortal_namespaces_are_those_of_v1_32() -> None:
    assert IMMORTAL_NAMESPACES == ("default", "kube-system", "kube-public")


@pytest.mark.parametrize("name", IMMORTAL_NAMESPACES)
def test_an_immortal_namespace_may_not_be_deleted(name: str) -> None:
    error = refusal("DELETE", "namespaces", "", name, {"metadata": {"name": name}})
    assert error.code == 403
    assert error.reason == "Forbidden"
    assert error.message == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    assert error.details == {"name": name, "kind": "namespaces"}


def test_other_namespaces_may_be_deleted_kube_node_lease_too() -> None:
    check("DELETE", "namespaces", "", "kube-node-lease", {"metadata": {}})
    check("DELETE", "namespaces", "", "team", ACTIVE)


def test_creating_in_a_missing_namespace_is_not_found() -> None:
    error = refusal("CREATE", "pods", "ghost", "web", None)
    assert (error.code, error.reason) == (404, "NotFound")
    assert error.message == 'namespaces "ghost" not found'
    assert error.details == {"name": "ghost", "kind": "namespaces"}


def test_updating_in_a_missing_namespace_is_not_found_too() -> None:
    assert refusal("UPDATE", "configmaps", "ghost", "cm", None).code == 404


def test_deleting_in_a_missing_namespace_goes_through() -> None:
    check("DELETE", "pods", "ghost", "web", None)


def test_creating_in_a_terminating_namespace_is_forbidden_with_a_cause() -> None:
    error = refusal("CREATE", "pods", "team", "web", TERMINATING)
    assert (error.code, error.reason) == (403, "Forbidden")
    assert error.message == (
        'pods "web" is forbidden: unable to create new content in namespace team '
        "because it is being terminated"
    )
    assert error.details == {
        "name": "web",
        "kind": "pods",
        "causes": [
            {
                "reason": "NamespaceTerminating",
                "message": "namespace team is being terminated",
                "field": "metadata.namespace",
            }
        ],
    }


def test_events_get_no_exception_in_a_terminating_namespace() -> None:
    error = refusal("CREATE", "events", "team", "web.1", TERMINATING)
    assert error.message.startswith('events "web.1" is forbidden: unable to create new content')


def test_the_resource_is_qualified_by_its_group() -> None:
    error = refusal("CREATE", "leases", "team", "node-1", TERMINATING, group="coordination.k8s.io")
    assert error.message.startswith('leases.coordination.k8s.io "node-1" is forbidden: ')
    assert error.details is not None and error.details["group"] == "coordination.k8s.io"


def test_a_nameless_request_is_named_unknown() -> None:
    assert refusal("CREATE", "pods", "team", "", TERMINATING).message.startswith(
        'pods "Unknown" is forbidden'
    )


def test_updates_and_deletes_in_a_terminating_namespace_go_through() -> None:
    check("UPDATE", "pods", "team", "web", TERMINATING)
    check("DELETE", "pods", "team", "web", TERMINATING)


def test_creating_in_an_active_namespace_goes_through() -> None:
    check("CREATE", "pods", "team", "web", ACTIVE)


def test_namespaces_themselves_and_cluster_scoped_objects_are_let_through() -> None:
    check("CREATE", "namespaces", "", "new", None)
    check("UPDATE", "namespaces", "", "team", TERMINATING)
    check("CREATE", "nodes", "", "node-1", None)


def test_local_subject_access_reviews_never_reveal_a_missing_namespace() -> None:
    check("CREATE", "localsubjectaccessreviews", "ghost", "", None, group="authorization.k8s.io")


def test_reads_are_not_checked() -> None:
    check("CONNECT", "pods", "ghost", "web", None)


def test_a_create_before_its_name_is_generated_is_named_by_its_prefix() -> None:
    body = {"metadata": {"generateName": "web-", "namespace": "team"}}
    error = refusal("CREATE", "pods", "team", object_name(body), TERMINATING)
    assert error.message.startswith('pods "web-" is forbidden: unable to create new content')
    assert error.details is not None and error.details["name"] == "web-"


def test_a_missing_namespace_is_reported_unqualified_whatever_the_resources_group() -> None:
    error = refusal("CREATE", "deployments", "ghost", "web", None, group="apps")
    assert error.message == 'namespaces "ghost" not found'
    assert error.details == {"name": "ghost", "kind": "namespaces"}


def test_an_immortal_namespace_may_be_updated_and_its_content_changed() -> None:
    check("UPDATE", "namespaces", "", "default", {"metadata": {"name": "default"}})
    check("CREATE", "pods", "kube-system", "web", {"status": {"phase": "Active"}})
