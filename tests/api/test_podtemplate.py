"""PodTemplate (v1): its template defaulted and validated as kube-apiserver v1.32 does
(ValidatePodTemplate), the generation counting template changes."""

from __future__ import annotations

import copy
from typing import Any

from pinnace.api.core.podtemplate import POD_TEMPLATE

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
}


def pod_template(template: Any = None) -> dict[str, Any]:
    obj = {"metadata": {"name": "web", "namespace": "default"}}
    if template is not None:
        obj["template"] = copy.deepcopy(template)
    POD_TEMPLATE.default(obj)
    return obj


def test_the_template_is_defaulted_as_a_pods() -> None:
    spec = pod_template(TEMPLATE)["template"]["spec"]
    assert (spec["restartPolicy"], spec["dnsPolicy"]) == ("Always", "ClusterFirst")
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert POD_TEMPLATE.validate(pod_template(TEMPLATE)) == []


def test_the_template_is_validated_as_a_pod_template() -> None:
    assert [str(e) for e in POD_TEMPLATE.validate(pod_template())] == [
        "template.spec.containers: Required value"
    ]
    bad = copy.deepcopy(TEMPLATE)
    bad["metadata"]["labels"] = {"app": "-web"}
    # No workload's rule on restart policy: Never is fine in a bare template.
    bad["spec"]["restartPolicy"] = "Never"
    assert [str(e) for e in POD_TEMPLATE.validate(pod_template(bad))] == [
        'template.labels: Invalid value: "-web": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ]


def test_template_changes_bump_the_generation(api: Any) -> None:
    created = api.call(api.server.create, POD_TEMPLATE, "default", pod_template(TEMPLATE)).obj
    assert created["metadata"]["generation"] == 1
    relabelled = copy.deepcopy(created)
    relabelled["metadata"]["labels"] = {"team": "a"}
    same = api.call(api.server.update, POD_TEMPLATE, "default", "web", relabelled).obj
    assert same["metadata"]["generation"] == 1
    changed = copy.deepcopy(same)
    changed["template"]["spec"]["containers"][0]["image"] = "nginx:1.28"
    assert (
        api.call(api.server.update, POD_TEMPLATE, "default", "web", changed).obj["metadata"][
            "generation"
        ]
        == 2
    )
