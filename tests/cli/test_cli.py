"""The `pinnace` command as a user runs it."""

import pytest
from tests.support import run_pinnace

import pinnace
from pinnace.cli.main import build_parser, main


def test_help_lists_the_subcommands() -> None:
    result = run_pinnace("--help")
    assert result.returncode == 0
    assert "usage: pinnace" in result.stdout
    assert "version" in result.stdout


def test_no_arguments_prints_help() -> None:
    result = run_pinnace()
    assert result.returncode == 0
    assert "usage: pinnace" in result.stdout


def test_version_names_pinnace_and_the_kubernetes_reference() -> None:
    result = run_pinnace("version")
    assert result.returncode == 0
    assert f"Pinnace {pinnace.__version__}" in result.stdout
    assert "Kubernetes reference: v1.32" in result.stdout


def test_unknown_subcommand_is_a_clear_error_without_traceback() -> None:
    result = run_pinnace("frobnicate")
    assert result.returncode == 2
    assert "invalid choice: 'frobnicate'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("flag", "value", "wording"),
    [
        ("--node-monitor-grace-period", "fifty", "must be a positive duration such as 40s"),
        ("--horizontal-pod-autoscaler-sync-period", "0s", "must be a positive duration"),
        ("--node-eviction-rate", "-1", "must be a number of nodes per second"),
        ("--terminated-pod-gc-threshold", "many", "must be a whole number of pods"),
    ],
)
def test_controller_flags_refuse_bad_values_naming_the_flag(
    flag: str, value: str, wording: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["up", flag, value])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert f"argument {flag}: {wording}" in error
    assert "Traceback" not in error


def test_controller_flags_reach_the_controllers() -> None:
    parser = build_parser()
    args = parser.parse_args(
        ["up", "--node-monitor-grace-period", "1m30s", "--terminated-pod-gc-threshold", "10"]
    )
    assert args.node_monitor_grace_period == 90.0
    assert args.terminated_pod_gc_threshold == 10
    assert args.horizontal_pod_autoscaler_sync_period == 15.0  # kube-controller-manager's


def test_service_flags_reach_the_api_server() -> None:
    args = build_parser().parse_args(
        [
            "up",
            "--service-cluster-ip-range",
            "10.0.0.0/16",
            "--service-node-port-range",
            "31000-31010",
            "--advertise-address",
            "172.18.0.2",
        ]
    )
    assert args.service_cluster_ip_range == "10.0.0.0/16"
    assert args.service_node_port_range == (31000, 31010)
    assert args.advertise_address == "172.18.0.2"


@pytest.mark.parametrize(
    ("flag", "value", "wording"),
    [
        ("--service-cluster-ip-range", "10.0.0.1/16", "not a CIDR"),
        ("--service-node-port-range", "32767-30000", "not a port range"),
        ("--advertise-address", "localhost", "'localhost' does not appear to be an IPv4 or IPv6"),
    ],
)
def test_bad_service_flags(
    flag: str, value: str, wording: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["up", flag, value])
    assert exit.value.code == 2
    assert f"argument {flag}: {wording}" in capsys.readouterr().err
