"""busybox's `tar`, as `kubectl cp` runs it through exec, over a simulated container's files
(`pinnace.kubelet.volumes`: its mounted ConfigMaps, Secrets, downward API and projected
volumes).

- `tar cf - PATH...` writes a ustar archive of the files and directories to stdout, member
  names without their leading `/` (busybox says so on stderr), so `kubectl cp pod:/etc/cfg .`
  works; a path that is not there is busybox's error, status 1.
- `tar xf - [-C DIR]` (`kubectl cp` into the pod) fails, status 1: the container's writable
  files (its layer, emptyDir volumes) are not modelled, and the modelled ones are read-only
  mounts.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pinnace.kubelet.volumes import Filesystem


@dataclass
class TarRun:
    stdout: bytes
    stderr: str
    status: int


def run_tar(args: Sequence[str], files: Filesystem, now: float) -> TarRun | None:
    """Run tar with `args`; None for a form it does not have."""
    if not args:
        return None
    flags, rest = args[0].lstrip("-"), list(args[1:])
    if "f" not in flags or not rest or rest[0] != "-":
        return None
    rest = rest[1:]
    if "x" in flags:
        return TarRun(
            b"", "tar: writing files is not modelled in Pinnace's simulated containers\n", 1
        )
    if "c" not in flags or not rest or any(p.startswith("-") for p in rest):
        return None
    return _create(rest, files, now)


def _create(paths: Sequence[str], files: Filesystem, now: float) -> TarRun:
    buffer, errors, stripped = io.BytesIO(), [], False
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for path in paths:
            if files.list(path) is None:
                errors.append(f"tar: {path}: No such file or directory\n")
                continue
            stripped = stripped or path.startswith("/")
            for name, content in _members(files, posixpath.normpath(path)):
                info = tarfile.TarInfo(name.lstrip("/"))
                info.mtime = int(now)
                if content is None:
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    archive.addfile(info)
                else:
                    data = content.encode()
                    info.size, info.mode = len(data), 0o644
                    archive.addfile(info, io.BytesIO(data))
    notice = "tar: removing leading '/' from member names\n" if stripped else ""
    return TarRun(buffer.getvalue(), notice + "".join(errors), 1 if errors else 0)


def _members(files: Filesystem, path: str) -> Iterator[tuple[str, str | None]]:
    """(path, content) of `path` and everything below it; content None for a directory."""
    content = files.read(path)
    if content is not None:
        yield path, content
        return
    yield path + "/", None
    for name in files.list(path) or ():
        yield from _members(files, posixpath.join(path, name))
