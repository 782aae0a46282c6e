"""Which images lack a shell: runc's refusal only where the image has nothing but its program."""

from __future__ import annotations

import pytest

from pinnace.kubelet.image_files import exec_error, start_error


@pytest.mark.parametrize(
    "image",
    [
        "registry.k8s.io/pause:3.10",
        "gcr.io/distroless/static-debian12",
        "gcr.io/distroless/base:nonroot",
        "gcr.io/distroless/cc-debian12:latest",
    ],
)
def test_an_image_of_one_program_has_no_shell(image: str) -> None:
    assert start_error(image, ["sh", "-c", "true"]) == (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        'failed: runc create failed: unable to start container process: exec: "sh": '
        "executable file not found in $PATH: unknown"
    )
    error = exec_error(image, ["/bin/sh"])
    assert error is not None
    assert error.endswith(
        'exec failed: unable to start container process: exec: "/bin/sh": '
        "stat /bin/sh: no such file or directory: unknown"
    )


@pytest.mark.parametrize(
    "image",
    [
        "busybox:1.36",
        "gcr.io/distroless/base:debug",  # debug tags carry busybox
        "gcr.io/distroless/python3-debian12",  # a language's image carries its interpreter
        "gcr.io/distroless/java17",
    ],
)
def test_other_images_run_the_command(image: str) -> None:
    assert start_error(image, ["sh", "-c", "true"]) is None
    assert exec_error(image, ["sh"]) is None


def test_the_pause_image_runs_its_own_program() -> None:
    assert start_error("registry.k8s.io/pause:3.10", ["/pause"]) is None
