"""Jobs (batch/v1) through the request pipeline, as kube-apiserver v1.32 answers."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pinnace.api import catalog
from pinnace.api.status import StatusError

JOBS = catalog.kind("batch", "jobs")
UID_LABEL = "batch.kubernetes.io/controller-uid"
NAME_LABEL = "batch.kubernetes.io/job-name"


def job(name: str = "pi", restart: str | None = "Never", **spec: Any) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "pi", "image": "perl:5.34"}]}
    if restart is not None:
        pod_spec["restartPolicy"] = restart
    body: dict[str, Any] = {"template": {"spec": pod_spec}, **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def create(api: Any, body: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(api.call(api.server.create, JOBS, "default", body).obj)


def update(api: Any, body: dict[str, Any], subresource: str = "") -> dict[str, Any]:
    name = body["metadata"]["name"]
    stored = api.call(api.server.update, JOBS, "default", name, body, None, subresource).obj
    return copy.deepcopy(stored)


def refused(api: Any, fn: Any, *args: Any) -> list[str]:
    """The causes of the 422 that the call gets."""
    with pytest.raises(StatusError) as e:
        api.call(fn, *args)
    assert e.value.code == 422
    assert e.value.details is not None
    return [f"{c['field']}: {c['message']}" for c in e.value.details["causes"]]


def refused_create(api: Any, body: dict[str, Any]) -> list[str]:
    return refused(api, api.server.create, JOBS, "default", body)


def refused_update(api: Any, body: dict[str, Any], subresource: str = "") -> list[str]:
    name = body["metadata"]["name"]
    return refused(api, api.server.update, JOBS, "default", name, body, None, subresource)


def test_create_defaults_and_generates_the_selector(api: Any) -> None:
    body = job()
    body["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    created = create(api, body)
    uid, spec = created["metadata"]["uid"], created["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "suspend")} == {
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 6,
        "suspend": False,
    }
    assert spec["completionMode"] == "NonIndexed"
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {UID_LABEL: uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "app": "pi",
        UID_LABEL: uid,
        NAME_LABEL: "pi",
        "controller-uid": uid,
        "job-name": "pi",
    }
    # The Job's own labels default to the template's, as the user wrote them.
    assert created["metadata"]["labels"] == {"app": "pi"}
    assert created["metadata"]["generation"] == 1
    assert created["status"] == {}


def test_parallelism_alone_leaves_completions_unset() -> None:
    body = job(parallelism=3)
    JOBS.default(body)
    assert "completions" not in body["spec"]
    assert body["spec"]["parallelism"] == 3


def test_backoff_limit_per_index_lifts_the_backoff_limit() -> None:
    body = job(completionMode="Indexed", completions=4, backoffLimitPerIndex=1)
    JOBS.default(body)
    assert body["spec"]["backoffLimit"] == 2147483647


def test_pod_failure_policy_defaults() -> None:
    rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    body = job(podFailurePolicy={"rules": [rule]})
    JOBS.default(body)
    assert body["spec"]["podReplacementPolicy"] == "Failed"
    assert body["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]


@pytest.mark.parametrize("restart", [None, "Always"])
def test_restart_policy_is_required(api: Any, restart: str | None) -> None:
    assert refused_create(api, job(restart=restart)) == [
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'
    ]


def test_unknown_restart_policy(api: Any) -> None:
    assert refused_create(api, job(restart="Sometimes")) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "Always", "OnFailure", "Never"',
        'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": '
        'supported values: "OnFailure", "Never"',
    ]


def test_pod_failure_policy_needs_never(api: Any) -> None:
    rule = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
    body = job(restart="OnFailure", podFailurePolicy={"rules": [rule, {"action": "Retry"}]})
    assert refused_create(api, body) == [
        'spec.podFailurePolicy.rules[1].action: Unsupported value: "Retry": '
        'supported values: "Count", "FailIndex", "FailJob", "Ignore"',
        "spec.podFailurePolicy.rules[1]: Invalid value: "
        "specifying one of OnExitCodes and OnPodConditions is required",
        'spec.template.spec.restartPolicy: Invalid value: "OnFailure": '
        'only "Never" is supported when podFailurePolicy is specified',
    ]


def test_negative_counts(api: Any) -> None:
    body = job(parallelism=-1, backoffLimit=-1, activeDeadlineSeconds=-5)
    assert refused_create(api, body) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        "spec.activeDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0",
        "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
    ]


def test_indexed_jobs_need_completions_and_a_short_enough_name(api: Any) -> None:
    assert refused_create(api, job(completionMode="Indexed", parallelism=2)) == [
        "spec.completions: Required value: when completion mode is Indexed"
    ]
    name = "j" * 62
    assert refused_create(api, job(name, completionMode="Indexed", completions=10)) == [
        f"metadata.name: Invalid value: {name!r}: will not able to create pod with invalid "
        f"DNS label: {name}-9".replace("'", '"')
    ]
    assert refused_create(api, job(completionMode="Sequential")) == [
        'spec.completionMode: Unsupported value: "Sequential": '
        'supported values: "NonIndexed", "Indexed"'
    ]


def test_per_index_limits_need_indexed_mode(api: Any) -> None:
    assert refused_create(api, job(maxFailedIndexes=1)) == [
        "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
        "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode",
    ]


def test_more_than_100000_completions_with_a_per_index_limit_are_capped(api: Any) -> None:
    many = {"completionMode": "Indexed", "completions": 200_000, "backoffLimitPerIndex": 1}
    assert refused_create(api, job(parallelism=10, **many)) == [
        "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000"
    ]
    capped = "when completions are above 100000 and used with backoff limit per index"
    assert refused_create(api, job(parallelism=10_001, maxFailedIndexes=10_001, **many)) == [
        f"spec.parallelism: Invalid value: 10001: must be less than or equal to 10000 {capped}",
        "spec.maxFailedIndexes: Invalid value: 10001: must be less than or equal to 10000 "
        f"{capped}",
    ]
    assert create(api, job("many", parallelism=10_000, maxFailedIndexes=10_000, **many))


def test_a_success_policy_needs_an_indexed_job(api: Any) -> None:
    policy = {"rules": [{"succeededCount": 1}, {"succeededIndexes": "0"}]}
    assert refused_create(api, job(successPolicy=policy)) == [
        "spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{"
        "batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), "
        "SucceededCount:(*int32)(0xc000010000)}, batch.SuccessPolicyRule{"
        "SucceededIndexes:(*string)(0xc000010000), SucceededCount:(*int32)(nil)}}}: "
        "requires indexed completion mode"
    ]
    for rules, shown in (([], "{}"), (None, "(nil)")):
        assert refused_create(api, job(successPolicy={"rules": rules})) == [
            f"spec.successPolicy: Invalid value: batch.SuccessPolicy{{Rules:[]batch."
            f"SuccessPolicyRule{shown}}}: requires indexed completion mode"
        ]


def test_success_policy_rules(api: Any) -> None:
    indexed = {"completionMode": "Indexed", "completions": 5}
    assert refused_create(api, job(successPolicy={"rules": []}, **indexed)) == [
        "spec.successPolicy.rules: Required value: at least one rules must be specified when "
        "the successPolicy is specified"
    ]
    rules = [
        {},
        {"succeededIndexes": "0-2,x"},
        {"succeededIndexes": "3-1"},
        {"succeededIndexes": "1,1"},
        {"succeededIndexes": "0-1-2"},
        {"succeededIndexes": "5"},
        {"succeededIndexes": "0,2-3", "succeededCount": 4},
        {"succeededCount": 6},
        {"succeededCount": -1},
    ]
    parsing = "error parsing succeededIndexes"
    rule = "spec.successPolicy.rules"
    assert refused_create(api, job(successPolicy={"rules": rules}, **indexed)) == [
        f"{rule}[0]: Required value: at least one of succeededCount or succeededIndexes must "
        "be specified",
        f'{rule}[1].succeededIndexes: Invalid value: "0-2,x": {parsing}: cannot convert string '
        'to integer for index: "x"',
        f'{rule}[2].succeededIndexes: Invalid value: "3-1": {parsing}: non-increasing order, '
        "previous: 3, current: 1",
        f'{rule}[3].succeededIndexes: Invalid value: "1,1": {parsing}: non-increasing order, '
        "previous: 1, current: 1",
        f'{rule}[4].succeededIndexes: Invalid value: "0-1-2": {parsing}: the fragment "0-1-2" '
        "violates the requirement that an index interval can have at most two parts "
        "separated by '-'",
        f'{rule}[5].succeededIndexes: Invalid value: "5": {parsing}: too large index: "5"',
        f"{rule}[6].succeededCount: Invalid value: 4: must be less than or equal to 3 (the "
        "number of indexes in the specified succeededIndexes field)",
        f"{rule}[7].succeededCount: Invalid value: 6: must be less than or equal to 5 (the "
        "number of specified completions)",
        f"{rule}[8].succeededCount: Invalid value: -1: must be greater than or equal to 0",
    ]
    good = {"rules": [{"succeededIndexes": "0,2-4", "succeededCount": 4}]}
    assert create(api, job("good", successPolicy=good, **indexed))["spec"]["successPolicy"] == good


def test_manual_selector_must_be_given_and_match(api: Any) -> None:
    assert refused_create(api, job(manualSelector=True)) == [
        "spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: map[string]string(nil): "
        "`selector` does not match template `labels`",
    ]
    body = job(manualSelector=True, selector={"matchLabels": {"app": "pi"}})
    body["spec"]["template"]["metadata"] = {"labels": {"app": "pi"}}
    created = create(api, body)
    assert created["spec"]["selector"] == {"matchLabels": {"app": "pi"}}
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "pi"}


def test_generated_labels_the_user_got_wrong() -> None:
    body = job()
    body["metadata"].update(namespace="default", uid="u-1")
    body["spec"]["template"]["metadata"] = {"labels": {NAME_LABEL: "other"}}
    JOBS.default(body)
    JOBS.prepare_for_create(body)
    assert [str(e) for e in JOBS.validate(body)] == [
        f"spec.template.metadata.labels[{NAME_LABEL}]: Invalid value: "
        f'map[string]string{{"{UID_LABEL}":"u-1", "{NAME_LABEL}":"other", '
        '"controller-uid":"u-1", "job-name":"pi"}: must be \'pi\'',
    ]
    body["spec"]["selector"] = {"matchLabels": {UID_LABEL: "u-2"}}
    assert [str(e) for e in JOBS.validate(body)][1:] == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
        f'"{UID_LABEL}":"u-2"}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}: '
        "`selector` not auto-generated",
        f"spec.template.metadata.labels: Invalid value: map[string]string{{"
        f'"{UID_LABEL}":"u-1", "{NAME_LABEL}":"other", "controller-uid":"u-1", '
        '"job-name":"pi"}: `selector` does not match template `labels`',
    ]


def test_completions_template_selector_and_mode_are_immutable(api: Any) -> None:
    created = create(api, job(completions=2))
    uid = created["metadata"]["uid"]
    changed = copy.deepcopy(created)
    changed["spec"]["completions"] = 3
    assert refused_update(api, changed) == [
        "spec.completions: Invalid value: 3: field is immutable"
    ]
    changed = copy.deepcopy(created)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5.36"
    assert refused_update(api, changed) == [
        "spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"
    ]
    changed = copy.deepcopy(created)
    changed["spec"]["selector"]["matchExpressions"] = [{"key": "tier", "operator": "DoesNotExist"}]
    assert refused_update(api, changed) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
        f'"{UID_LABEL}":"{uid}"}}, MatchExpressions:[]v1.LabelSelectorRequirement{{'
        'v1.LabelSelectorRequirement{Key:"tier", Operator:"DoesNotExist", '
        "Values:[]string(nil)}}}: field is immutable"
    ]
    changed = copy.deepcopy(created)
    changed["spec"]["completionMode"] = "Indexed"
    assert refused_update(api, changed) == [
        'spec.completionMode: Invalid value: "Indexed": field is immutable'
    ]


def test_the_policies_are_immutable_and_shown_as_go_structs(api: Any) -> None:
    created = create(api, job("indexed", completionMode="Indexed", completions=2))
    changed = copy.deepcopy(created)
    changed["spec"]["podReplacementPolicy"] = "Failed"
    changed["spec"]["podFailurePolicy"] = {
        "rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3]}},
        ]
    }
    changed["spec"]["successPolicy"] = {"rules": [{"succeededCount": 1}]}
    pattern = 'batch.PodFailurePolicyOnPodConditionsPattern{Type:"DisruptionTarget", Status:"True"}'
    assert refused_update(api, changed) == [
        "spec.podFailurePolicy: Invalid value: batch.PodFailurePolicy{Rules:[]batch."
        'PodFailurePolicyRule{batch.PodFailurePolicyRule{Action:"Ignore", '
        "OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(nil), "
        f"OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern{{{pattern}}}}}, "
        'batch.PodFailurePolicyRule{Action:"FailJob", '
        "OnExitCodes:(*batch.PodFailurePolicyOnExitCodesRequirement)(0xc000010000), "
        "OnPodConditions:[]batch.PodFailurePolicyOnPodConditionsPattern(nil)}}}: "
        "field is immutable",
        "spec.successPolicy: Invalid value: batch.SuccessPolicy{Rules:[]batch.SuccessPolicyRule{"
        "batch.SuccessPolicyRule{SucceededIndexes:(*string)(nil), "
        "SucceededCount:(*int32)(0xc000010000)}}}: field is immutable",
    ]


def test_parallelism_may_change_and_bumps_the_generation(api: Any) -> None:
    created = create(api, job())
    changed = copy.deepcopy(created)
    changed["spec"]["parallelism"] = 4
    after = update(api, changed)
    assert after["spec"]["parallelism"] == 4
    assert after["metadata"]["generation"] == 2


def test_indexed_jobs_scale_completions_with_parallelism(api: Any) -> None:
    created = create(api, job(completionMode="Indexed", completions=2, parallelism=2))
    changed = copy.deepcopy(created)
    changed["spec"]["completions"] = 5
    assert refused_update(api, changed) == [
        "spec.completions: Invalid value: 5: can only be modified in tandem with spec.parallelism"
    ]
    changed["spec"]["parallelism"] = 5
    assert update(api, changed)["spec"]["completions"] == 5


def test_a_suspended_job_may_move_its_pods_until_it_starts(api: Any) -> None:
    created = create(api, job(suspend=True))
    changed = copy.deepcopy(created)
    template = changed["spec"]["template"]
    template["spec"]["nodeSelector"] = {"pool": "batch"}
    template["spec"]["tolerations"] = [{"key": "batch", "operator": "Exists"}]
    template["metadata"]["annotations"] = {"queue": "a"}
    after = update(api, changed)
    assert after["spec"]["template"]["spec"]["nodeSelector"] == {"pool": "batch"}
    started = copy.deepcopy(after)
    started["status"] = {"startTime": "2026-01-01T00:00:00Z"}
    started = update(api, started, "status")
    started["spec"]["template"]["spec"]["nodeSelector"] = {"pool": "other"}
    assert refused_update(api, started) == [
        "spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable"
    ]
    resumed = copy.deepcopy(after)
    resumed["metadata"]["resourceVersion"] = started["metadata"]["resourceVersion"]
    resumed["spec"]["suspend"] = False
    assert update(api, resumed)["spec"]["suspend"] is False


def test_status_endpoint_writes_only_status(api: Any) -> None:
    created = create(api, job())
    written = copy.deepcopy(created)
    written["status"] = {"active": 1, "ready": 1}
    written["spec"]["parallelism"] = 9
    after = update(api, written, "status")
    assert after["status"] == {"active": 1, "ready": 1}
    assert after["spec"] == created["spec"]
    spec_write = copy.deepcopy(after)
    spec_write["status"] = {}
    assert update(api, spec_write)["status"] == {"active": 1, "ready": 1}
    spec_write = copy.deepcopy(after)
    spec_write["status"] = {"failed": -1, "succeeded": -2}
    assert refused_update(api, spec_write, "status") == [
        "status.succeeded: Invalid value: -2: must be greater than or equal to 0",
        "status.failed: Invalid value: -1: must be greater than or equal to 0",
        "status.failed: Invalid value: -1: cannot decrease the failed counter",
        "status.succeeded: Invalid value: -2: cannot decrease the succeeded counter",
    ]


def test_pod_failure_policy_requirements(api: Any) -> None:
    rules = [
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "values": [3, 1, 3]}},
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [0]}},
        {"action": "Count", "onPodConditions": [{"type": "", "status": "Maybe"}]},
        {"action": "FailIndex", "onExitCodes": {"operator": "NotIn", "values": [1]}},
    ]
    assert refused_create(api, job(podFailurePolicy={"rules": rules})) == [
        "spec.podFailurePolicy.rules[0].onExitCodes.containerName: Invalid value: "
        '"main": must be one of the container or initContainer names in the pod template',
        "spec.podFailurePolicy.rules[0].onExitCodes.operator: Required value: "
        'valid values: "In", "NotIn"',
        "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value: 3",
        "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: "
        "[]int32{3, 1, 3}: must be ordered",
        "spec.podFailurePolicy.rules[1].onExitCodes.values[0]: Invalid value: 0: "
        "must not be 0 for the In operator",
        'spec.podFailurePolicy.rules[2].onPodConditions[0].type: Invalid value: "": '
        "name part must be non-empty",
        'spec.podFailurePolicy.rules[2].onPodConditions[0].type: Invalid value: "": '
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
        "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  "
        "or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
        "[A-Za-z0-9]')",
        'spec.podFailurePolicy.rules[2].onPodConditions[0].status: Unsupported value: "Maybe"'
        ': supported values: "False", "True", "Unknown"',
        'spec.podFailurePolicy.rules[3].action: Invalid value: "FailIndex": '
        "requires the backoffLimitPerIndex to be set",
    ]


def test_pod_replacement_policy(api: Any) -> None:
    assert refused_create(api, job(podReplacementPolicy="Never")) == [
        'spec.podReplacementPolicy: Unsupported value: "Never": '
        'supported values: "Failed", "TerminatingOrFailed"'
    ]
    rule = {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
    body = job(podFailurePolicy={"rules": [rule]}, podReplacementPolicy="TerminatingOrFailed")
    assert refused_create(api, body) == [
        'spec.podReplacementPolicy: Unsupported value: "TerminatingOrFailed": '
        'supported values: "Failed"'
    ]


def finished(**status: Any) -> dict[str, Any]:
    met = {"type": "SuccessCriteriaMet", "status": "True"}
    complete = {"type": "Complete", "status": "True"}
    return {"conditions": [met, complete], **status}


def test_a_finished_job_stays_finished(api: Any) -> None:
    created = create(api, job())
    written = copy.deepcopy(created)
    written["status"] = finished(
        startTime="2026-01-01T00:00:00Z", completionTime="2026-01-01T00:01:00Z", succeeded=1
    )
    done = update(api, written, "status")
    reopened = copy.deepcopy(done)
    reopened["status"]["conditions"] = []
    reopened["status"]["completionTime"] = "2026-01-01T00:02:00Z"
    reopened["status"]["succeeded"] = 0
    assert refused_update(api, reopened, "status") == [
        "status.completionTime: Invalid value: 2026-01-01 00:02:00 +0000 UTC: "
        "cannot set completionTime when there is no Complete=True condition",
        "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
        "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
        "status.completionTime: Invalid value: 2026-01-01 00:02:00 +0000 UTC: "
        "completionTime cannot be mutated",
        "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition",
    ]


def test_finishing_needs_a_start_and_no_active_pods(api: Any) -> None:
    created = create(api, job())
    written = copy.deepcopy(created)
    written["status"] = finished(
        active=1, ready=2, terminating=1, completionTime="2026-01-01T00:01:00Z"
    )
    written["status"]["uncountedTerminatedPods"] = {"failed": ["a"]}
    assert refused_update(api, written, "status") == [
        "status.active: Invalid value: 1: active>0 is invalid for finished job",
        "status.startTime: Required value: startTime is required for finished job",
        "status.uncountedTerminatedPods: Invalid value: batch.UncountedTerminatedPods{"
        'Succeeded:[]types.UID(nil), Failed:[]types.UID{"a"}}: '
        "uncountedTerminatedPods needs to be empty for finished job",
        "status.terminating: Invalid value: 1: terminating>0 is invalid for finished job",
        "status.ready: Invalid value: 2: cannot set more ready pods than active",
    ]
    written["status"] = finished(
        startTime="2026-01-01T00:05:00Z", completionTime="2026-01-01T00:01:00Z"
    )
    written["status"]["conditions"].append({"type": "Failed", "status": "True"})
    assert refused_update(api, written, "status") == [
        "status.conditions: Invalid value: cannot set Complete=True and Failed=true conditions",
        "status.completionTime: Invalid value: 2026-01-01 00:01:00 +0000 UTC: "
        "completionTime cannot be set before startTime",
        "status.conditions: Invalid value: cannot set Failed=True condition without the "
        "FailureTarget=true condition",
        "status.conditions: Invalid value: cannot set SuccessCriteriaMet=True and Failed=true "
        "conditions",
    ]


def test_terminal_conditions_come_after_their_targets(api: Any) -> None:
    created = create(api, job())
    written = copy.deepcopy(created)
    written["status"] = {
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [{"type": "Complete", "status": "True"}],
    }
    assert refused_update(api, written, "status") == [
        "status.completionTime: Required value: completionTime is required for Complete jobs",
        "status.conditions: Invalid value: cannot set Complete=True condition without the "
        "SuccessCriteriaMet=true condition",
    ]
    written["status"]["conditions"] = [
        {"type": "FailureTarget", "status": "True"},
        {"type": "Failed", "status": "True"},
    ]
    assert update(api, written, "status")["status"]["conditions"][1]["type"] == "Failed"


def test_completed_and_failed_indexes(api: Any) -> None:
    plain = create(api, job())
    written = copy.deepcopy(plain)
    written["status"] = {"completedIndexes": "0", "failedIndexes": "0"}
    assert refused_update(api, written, "status") == [
        'status.completedIndexes: Invalid value: "0": cannot set non-empty completedIndexes '
        "when non-indexed completion mode",
        'status.failedIndexes: Invalid value: "0": cannot set non-null failedIndexes when '
        "backoffLimitPerIndex is null",
        'status.failedIndexes: Invalid value: "0": failedIndexes and completedIndexes overlap '
        "at index: 0",
    ]
    indexed = create(
        api,
        job("ix", completionMode="Indexed", completions=5, parallelism=2, backoffLimitPerIndex=1),
    )
    written = copy.deepcopy(indexed)
    written["status"] = {"completedIndexes": "0-2,x", "failedIndexes": "4,5"}
    assert refused_update(api, written, "status") == [
        'status.completedIndexes: Invalid value: "0-2,x": error parsing completedIndexes: '
        'cannot convert string to integer for index: "x"',
        'status.failedIndexes: Invalid value: "4,5": error parsing failedIndexes: '
        'too large index: "5"',
    ]
    written["status"] = {"completedIndexes": "0-2", "failedIndexes": "2-4"}
    assert refused_update(api, written, "status") == [
        'status.failedIndexes: Invalid value: "2-4": failedIndexes and completedIndexes '
        "overlap at index: 2",
    ]
    written["status"] = {"completedIndexes": "0-2", "failedIndexes": "3-4"}
    assert update(api, written, "status")["status"]["failedIndexes"] == "3-4"


def test_uncounted_pods_are_distinct_uids(api: Any) -> None:
    created = create(api, job())
    written = copy.deepcopy(created)
    written["status"] = {"uncountedTerminatedPods": {"succeeded": ["a", ""], "failed": ["a"]}}
    assert refused_update(api, written, "status") == [
        'status.uncountedTerminatedPods.succeeded[1]: Invalid value: "": must not be empty',
        'status.uncountedTerminatedPods.failed[0]: Duplicate value: "a"',
    ]


def test_a_job_from_before_the_prefixed_labels_still_updates() -> None:
    old = job()
    old["metadata"].update(namespace="default", uid="u-1", resourceVersion="5")
    old["spec"]["selector"] = {"matchLabels": {"controller-uid": "u-1"}}
    old["spec"]["template"]["metadata"] = {"labels": {"controller-uid": "u-1", "job-name": "pi"}}
    JOBS.default(old)
    new = copy.deepcopy(old)
    new["spec"]["parallelism"] = 2
    assert JOBS.validate_update(new, old) == []


@pytest.mark.parametrize(
    ("managed_by", "expected"),
    [
        ("kueue.x-k8s.io/multikueue", []),
        (
            "multikueue",
            [
                'spec.managedBy: Invalid value: "multikueue": '
                'must be a domain-prefixed path (such as "acme.io/foo")'
            ],
        ),
        (
            "Kueue.io/a b",
            [
                'spec.managedBy: Invalid value: "Kueue.io": a lowercase RFC 1123 subdomain must '
                "consist of lower case alphanumeric characters, '-' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                'spec.managedBy: Invalid value: "a b": Invalid path (regex used for validation is '
                "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
            ],
        ),
        (
            "example.com/" + "x" * 60,
            [
                "spec.managedBy: Too long: must have at most 63 bytes",
            ],
        ),
    ],
)
def test_managed_by(api: Any, managed_by: str, expected: list[str]) -> None:
    if not expected:
        assert create(api, job(managedBy=managed_by))["spec"]["managedBy"] == managed_by
    else:
        assert refused_create(api, job(managedBy=managed_by)) == expected
