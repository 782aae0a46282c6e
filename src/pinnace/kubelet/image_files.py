"""What a container's command, or a command exec'd in it, finds in its image: in most images,
the programs of the shell model (`pinnace.kubelet.shell`, busybox's and coreutils' alike); in
an image built from scratch with one program, that program alone. There runc cannot start any
other, and containerd fails with runc's words (`stat /bin/sh: no such file or directory` for
a path):

- an exec (pkg/cri/server/container_execsync.go, wrapped by its streaming runtime's Exec)
  fails before the command runs; the kubelet's streaming server (remotecommand's ServeExec)
  answers that with an InternalError Status rather than an exit code:

      failed to exec in container: failed to start exec "<exec id>": OCI runtime exec
      failed: exec failed: unable to start container process: exec: "sh": executable file
      not found in $PATH: unknown

- a container's start (StartContainer) fails once the container is created: it exits at
  once with code 128, reason StartError and this message, and the kubelet records it as
  RunContainerError:

      failed to create containerd task: failed to create shim task: OCI runtime create
      failed: runc create failed: unable to start container process: exec: "sh":
      executable file not found in $PATH: unknown
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from pinnace.api.objects import Shared
from pinnace.kubelet.behaviour import IMAGE_COMMANDS
from pinnace.kubelet.runtime import image_reference, image_repository

SCRATCH_REPOSITORIES = (
    "registry.k8s.io/pause",
    "k8s.gcr.io/pause",
    "gcr.io/distroless/static*",
    "gcr.io/distroless/base*",
    "gcr.io/distroless/cc*",
)
"""Repositories (a trailing * for all that begin so) whose images hold their own program and
no shell or utilities: the pause image (/pause) and Google's distroless images that carry no
language runtime (static, base and cc, of every Debian release), but for their `debug` tags,
which add busybox. The distroless images of a language (python3, java, nodejs) carry its
interpreter, which the shell model stands in for."""


def exec_error(image: str, argv: Sequence[str]) -> str | None:
    """CRI's error for exec'ing `argv` in a container of `image` when the image lacks its
    program; None when it has it."""
    lacking = _lacking(image, argv)
    if lacking is None:
        return None
    return (
        f'failed to exec in container: failed to start exec "{secrets.token_hex(32)}": '
        f"OCI runtime exec failed: exec failed: {lacking}: unknown"
    )


def start_error(image: str, argv: Sequence[str]) -> str | None:
    """CRI's error for starting a container of `image` whose command is `argv` when the
    image lacks its program (containerd's StartContainer); None when it has it."""
    lacking = _lacking(image, argv)
    if lacking is None:
        return None
    return (
        "failed to create containerd task: failed to create shim task: OCI runtime create "
        f"failed: runc create failed: {lacking}: unknown"
    )


def _lacking(image: str, argv: Sequence[str]) -> str | None:
    """runc's words for the program of `argv` that `image` lacks; None when it has it."""
    if not argv or not _scratch(image):
        return None
    program = argv[0]
    if program in IMAGE_COMMANDS.get(image_repository(image), ())[:1]:
        return None
    why = (
        f"stat {program}: no such file or directory"
        if "/" in program
        else "executable file not found in $PATH"
    )
    return f'unable to start container process: exec: "{program}": {why}'


def _is_scratch(image: str) -> bool:
    repository = image_repository(image)
    if not any(
        repository == r or (r.endswith("*") and repository.startswith(r[:-1]))
        for r in SCRATCH_REPOSITORIES
    ):
        return False
    tag = image_reference(image).split("@", 1)[0].rsplit(":", 1)[-1]
    return "debug" not in tag


# Read at every container's start: the pods of a workload name a few images.
_scratch = Shared(_is_scratch, 1024).__getitem__
