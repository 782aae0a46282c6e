"""The README's Quickstart and CI run the same test command."""

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", quickstart)


def test_quickstart_has_the_run_and_test_commands() -> None:
    run, test = quickstart_commands()
    assert "pip install ." in run and "pinnace" in run
    assert ".[test]" in test and "pytest" in test


def test_ci_runs_exactly_the_readme_test_command() -> None:
    _, test = quickstart_commands()
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci_lines


def test_readme_python_examples_run_as_shown() -> None:
    readme = (ROOT / "README.md").read_text()
    examples = "\n".join(re.findall(r"```pycon\n(.+?)```", readme, flags=re.S))
    parser = doctest.DocTestParser()
    test = parser.get_doctest(examples, {}, "README.md", str(ROOT / "README.md"), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert test.examples and runner.failures == 0
