"""deployment_util's EqualIgnoreHash (pkg/controller/deployment/util, v1.32): two pod templates
are equal when they differ only in the pod-template-hash label, a template whose only label is
the hash equals one without labels, and neither template is changed by the comparison."""

from __future__ import annotations

import copy

from pinnace.controllers.deployment_util import POD_TEMPLATE_HASH, equal_ignore_hash

SPEC = {"containers": [{"name": "web", "image": "nginx"}]}


def template(labels: dict[str, str] | None) -> dict[str, object]:
    metadata: dict[str, object] = {} if labels is None else {"labels": labels}
    return {"metadata": metadata, "spec": copy.deepcopy(SPEC)}


def test_templates_differing_only_in_the_hash_label_are_equal() -> None:
    a = template({"app": "web", POD_TEMPLATE_HASH: "5d8f7c9b6b"})
    b = template({"app": "web"})
    before = copy.deepcopy((a, b))
    assert equal_ignore_hash(a, b)
    assert equal_ignore_hash(b, a)
    assert (a, b) == before  # neither is changed


def test_a_template_labelled_only_with_the_hash_equals_one_without_labels() -> None:
    assert equal_ignore_hash(template({POD_TEMPLATE_HASH: "x"}), template(None))
    assert equal_ignore_hash(template({}), template(None))


def test_any_other_difference_counts() -> None:
    assert not equal_ignore_hash(template({"app": "web"}), template({"app": "api"}))
    other = template({"app": "web"})
    other["spec"] = {"containers": [{"name": "web", "image": "nginx:2"}]}
    assert not equal_ignore_hash(template({"app": "web"}), other)
