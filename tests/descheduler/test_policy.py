"""DeschedulerPolicy files: what a good one configures, and bad ones refused naming the field;
and the periodic mode, on the virtual clock."""

from __future__ import annotations

import pytest
from tests.descheduler.cluster import Descheduled
from tests.descheduler.unit import node, policy, would_evict

from pinnace.descheduler.args import PolicyError
from pinnace.descheduler.policy import parse
from pinnace.descheduler.runner import TOO_SMALL, CycleResult, Descheduler
from pinnace.descheduler.strategies import LowNodeUtilization, PodLifeTime

FULL = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
nodeSelector: "pool=general"
maxNoOfPodsToEvictPerNode: 5
maxNoOfPodsToEvictPerNamespace: 10
maxNoOfPodsToEvictTotal: 20
profiles:
- name: balance
  pluginConfig:
  - name: DefaultEvictor
    args:
      nodeFit: true
      evictLocalStoragePods: true
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
  plugins:
    balance:
      enabled: [LowNodeUtilization]
    filter:
      enabled: [DefaultEvictor]
- name: cleanup
  pluginConfig:
  - name: PodLifeTime
    args:
      maxPodLifeTimeSeconds: 86400
  plugins:
    deschedule:
      enabled: [PodLifeTime]
"""


def test_a_full_policy() -> None:
    parsed = parse(FULL)
    assert (parsed.limits.per_node, parsed.limits.per_namespace, parsed.limits.total) == (
        5,
        10,
        20,
    )
    assert parsed.node_selector is not None and parsed.node_selector.matches({"pool": "general"})
    balance, cleanup = parsed.profiles
    assert balance.evictor.node_fit and balance.evictor.evict_local_storage_pods
    (lnu,) = balance.strategies
    assert isinstance(lnu, LowNodeUtilization)
    # pods, left out, counts as 100% so that it never decides.
    assert lnu.thresholds == {"cpu": 20, "memory": 20, "pods": 100}
    assert lnu.target_thresholds == {"cpu": 50, "memory": 50, "pods": 100}
    (lifetime,) = cleanup.strategies
    assert isinstance(lifetime, PodLifeTime) and lifetime.max_seconds == 86400
    assert not cleanup.evictor.node_fit


LNU = "LowNodeUtilization"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[]", "the policy must be a DeschedulerPolicy object (apiVersion descheduler/v1alpha2)"),
        (
            "apiVersion: descheduler/v1alpha2\nkind: Policy\n",
            'kind: Unsupported value: "Policy": supported values: "DeschedulerPolicy"',
        ),
        (
            "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n",
            "profiles: Required value: at least one profile is needed",
        ),
        (
            policy(
                LNU, "balance", "      thresholds: {cpu: 20}\n      targetThresholds: {cpu: 150}\n"
            ),
            "profiles[0].pluginConfig[0].args.targetThresholds[cpu]: Invalid value: 150: "
            "must be in [0, 100]",
        ),
        (
            policy(
                LNU, "balance", "      thresholds: {cpu: 60}\n      targetThresholds: {cpu: 50}\n"
            ),
            "profiles[0].pluginConfig[0].args.thresholds[cpu]: Invalid value: 60: "
            "greater than targetThresholds' 50",
        ),
        (
            policy(
                LNU, "balance", "      thresholds: {cpu: 20}\n      targetThresholds: {pods: 50}\n"
            ),
            'profiles[0].pluginConfig[0].args.targetThresholds: Invalid value: ["pods"]: '
            "thresholds and targetThresholds configured different resources",
        ),
        (
            policy(LNU, "balance"),
            "profiles[0].pluginConfig[LowNodeUtilization].args.thresholds: Required value",
        ),
        (
            policy(
                "PodLifeTime",
                "deschedule",
                "      maxPodLifeTimeSeconds: 60\n      namespaces: {include: [a], exclude: [b]}\n",
            ),
            "profiles[0].pluginConfig[0].args.namespaces: Forbidden: only one of include and "
            "exclude can be set",
        ),
        (
            policy("PodLifeTime", "deschedule", "      maxPodLifeTimeSeconds: ten\n"),
            'profiles[0].pluginConfig[0].args.maxPodLifeTimeSeconds: Invalid value: "ten": '
            "must be an integer",
        ),
        (
            policy(
                "RemovePodsViolatingNodeTaints",
                "deschedule",
                evictor="      priorityThreshold: {name: x, value: 1}\n",
            ),
            "profiles[0].pluginConfig[0].args.priorityThreshold: Forbidden: only one of "
            "priorityThreshold fields can be set",
        ),
        (
            policy("RemovePodsViolatingNodeTaints", "deschedule", top="nodeSelector: 'a in ('\n"),
            "nodeSelector: Invalid value:",
        ),
        (
            policy("RemovePodsViolatingNodeTaints", "deschedule").replace(
                "deschedule:", "filter:\n      enabled: [Mine]\n    deschedule:"
            ),
            'profiles[0].plugins.filter.enabled[0]: Unsupported value: "Mine": '
            'supported values: "DefaultEvictor"',
        ),
    ],
)
def test_bad_policies_name_the_field(text: str, error: str) -> None:
    with pytest.raises(PolicyError) as refused:
        parse(text)
    assert str(refused.value).startswith(error), str(refused.value)


def test_one_node_is_too_few_to_evict_from() -> None:
    rules = policy("RemovePodsViolatingNodeTaints", "deschedule")
    assert would_evict(rules, [node("only")], []) == []
    cluster = Descheduled(nodes=1)
    try:
        assert cluster.deschedule(rules).skipped == TOO_SMALL
    finally:
        cluster.close()


def test_periodic_mode_runs_a_cycle_every_interval() -> None:
    cluster = Descheduled(nodes=2)
    try:
        cycles: list[CycleResult] = []
        descheduler = Descheduler(
            cluster.client,
            parse(policy("PodLifeTime", "deschedule", "      maxPodLifeTimeSeconds: 3600\n")),
        )
        task = cluster.loop.create_task(descheduler.run(300, cycles.append))
        cluster.settle(1000)
        task.cancel()
        assert len(cycles) == 4  # at 0, 300, 600 and 900 s
    finally:
        cluster.close()
