"""busybox's `tar`, as `kubectl cp` runs it through exec, over a simulated container's files
(`pinnace.kubelet.volumes`: its writable layer and its mounted volumes).

- `tar cf - PATH...` writes a ustar archive of the files and directories to stdout, member
  names without their leading `/` (busybox says so on stderr), so `kubectl cp pod:/etc/cfg .`
  works; a path that is not there is busybox's error, status 1.
- `tar xf - [-C DIR]` (and `xmf`, as `kubectl cp` into the pod runs it) unpacks the archive
  on stdin into the container's writable files (its layer, emptyDir and claim volumes),
  below DIR; a member that would land in a read-only mount (a ConfigMap's) stops it with
  busybox's error, status 1. Directories are implicit in the model (a directory is there
  while a file is below it), so an empty one is not kept, DIR need not exist unless it is
  a file, and links and other special members are skipped. Contents are bytes as text
  (undecodable ones kept as surrogates), of which a file keeps its last `KEPT_BYTES`.
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


@dataclass(frozen=True)
class Tar:
    """A tar command line of a form the model has."""

    extract: bool
    """`x`: it reads an archive on stdin; otherwise `c`, it writes one to stdout."""
    paths: tuple[str, ...] = ()
    directory: str = ""
    """-C DIR."""

    def run(self, files: Filesystem, now: float, stdin: bytes = b"") -> TarRun:
        if self.extract:
            return _extract(stdin, self.directory or "/", files)
        return _create(self.paths, files, now)


def parse_tar(args: Sequence[str]) -> Tar | None:
    """The tar command `args` give; None for a form it does not have."""
    if not args:
        return None
    flags, rest = args[0].lstrip("-"), list(args[1:])
    if "f" not in flags or not rest or rest[0] != "-":
        return None
    rest = rest[1:]
    if "x" in flags:
        if rest[:1] == ["-C"] and len(rest) == 2:
            return Tar(True, directory=rest[1])
        return None if rest else Tar(True)
    if "c" not in flags or not rest or any(p.startswith("-") for p in rest):
        return None
    return Tar(False, tuple(rest))


def run_tar(
    args: Sequence[str], files: Filesystem, now: float, stdin: bytes = b""
) -> TarRun | None:
    """Run tar with `args`, `stdin` its input; None for a form it does not have."""
    tar = parse_tar(args)
    return None if tar is None else tar.run(files, now, stdin)


def _extract(data: bytes, directory: str, files: Filesystem) -> TarRun:
    """busybox's tar x: members in order, stopping at the first it cannot write."""
    if files.read(directory) is not None:
        return TarRun(b"", f"tar: can't change directory to '{directory}': Not a directory\n", 1)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            return _unpack(archive, directory, files)
    except tarfile.TarError:
        return TarRun(b"", "tar: short read\n" if not data else "tar: invalid tar magic\n", 1)


def _unpack(archive: tarfile.TarFile, directory: str, files: Filesystem) -> TarRun:
    for member in archive:
        name = member.name.lstrip("/")
        path = posixpath.join(directory, name)
        if member.isdir():
            if not files.is_dir(path) and not files.writable(path):
                return _failed(f"can't create directory '{name}'", "Read-only file system")
        elif member.isfile():
            reader = archive.extractfile(member)
            content = reader.read() if reader is not None else b""
            if files.is_dir(path):
                return _failed(f"can't open '{name}'", "Is a directory")
            if not files.writable(path):
                return _failed(f"can't open '{name}'", "Read-only file system")
            files.write(path, content.decode(errors="surrogateescape"), append=False)
    return TarRun(b"", "", 0)


def _failed(what: str, why: str) -> TarRun:
    return TarRun(b"", f"tar: {what}: {why}\n", 1)


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
                    data = content.encode(errors="surrogateescape")
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
