"""Leader election's settings of `pinnace scheduler` and `pinnace controller-manager`: a flag
given overrides the configuration file's leaderElection, which overrides the defaults, as
kube-scheduler's ApplyLeaderElectionTo does."""

from __future__ import annotations

import argparse

import pytest

from pinnace.cli import component
from pinnace.client.leaderelection import LeaderElectionConfig
from pinnace.scheduler.config import parse


def flags(*given: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    component.add_flags(parser, "kube-scheduler")
    return parser.parse_args(list(given))


def test_the_defaults_are_kube_schedulers() -> None:
    assert component.election(flags(), "kube-scheduler") == component.Election(
        LeaderElectionConfig(15, 10, 2), "kube-scheduler", "kube-system"
    )
    assert component.election(flags("--leader-elect=false"), "kube-scheduler") is None


def test_the_configuration_file_then_the_flags_given() -> None:
    configured = parse(
        """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaseDuration: 30s
  renewDeadline: 20s
  resourceName: my-scheduler
"""
    ).leader_election
    assert component.election(flags(), "kube-scheduler", configured) == component.Election(
        LeaderElectionConfig(30, 20, 2), "my-scheduler"
    )
    overridden = flags("--leader-elect-lease-duration=25s", "--leader-elect-resource-name=x")
    assert component.election(overridden, "kube-scheduler", configured) == component.Election(
        LeaderElectionConfig(25, 20, 2), "x"
    )
    assert component.election(flags(), "kube-scheduler", {"leaderElect": False}) is None
    assert component.election(flags("--leader-elect"), "s", {"leaderElect": False}) is not None


def test_bad_settings_are_said() -> None:
    with pytest.raises(ValueError, match=r"leaderElection.retryPeriod: not a duration: 'soon'"):
        component.election(flags(), "kube-scheduler", {"retryPeriod": "soon"})
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        component.election(flags("--leader-elect-lease-duration=5s"), "kube-scheduler")
