"""examples/research/maskable_ppo.py where the `rl` extra is not installed: it says what to
install instead of a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests.support import run_example

EXAMPLE = Path(__file__).parents[2] / "examples" / "research" / "maskable_ppo.py"


@pytest.mark.skipif(
    importlib.util.find_spec("sb3_contrib") is not None, reason="the rl extra is installed"
)
def test_without_the_rl_extra_it_says_what_to_install() -> None:
    run = run_example(EXAMPLE, "--steps", "10")
    assert run.returncode == 1
    assert run.stderr == (
        "maskable_ppo.py needs torch, stable-baselines3 and sb3-contrib: "
        "pip install 'pinnace[rl]'\n"
    )
