"""`pinnace up --feature-gates`, as the Kubernetes components read the flag."""

import pytest

from pinnace.api.features import FeatureGates
from pinnace.cli.main import build_parser, main


def test_feature_gates_reach_the_cluster_options() -> None:
    args = build_parser().parse_args(["up"])
    assert args.feature_gates == FeatureGates()
    gates = "InPlacePodVerticalScaling=true,InPlacePodVerticalScalingAllocatedStatus=1"
    args = build_parser().parse_args(["up", "--feature-gates", gates])
    assert args.feature_gates == FeatureGates(
        in_place_pod_vertical_scaling=True, in_place_pod_vertical_scaling_allocated_status=True
    )


@pytest.mark.parametrize(
    ("value", "wording"),
    [
        ("SidecarContainers=true", "unrecognized feature gate: SidecarContainers"),
        (
            "InPlacePodVerticalScaling=yes",
            "invalid value of InPlacePodVerticalScaling=yes, err: strconv.ParseBool: "
            'parsing "yes": invalid syntax',
        ),
        ("InPlacePodVerticalScaling", "missing bool value for InPlacePodVerticalScaling"),
    ],
)
def test_bad_feature_gates(value: str, wording: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["up", "--feature-gates", value])
    assert exit.value.code == 2
    error = capsys.readouterr().err
    assert f"argument --feature-gates: {wording}" in error
    assert "Traceback" not in error
