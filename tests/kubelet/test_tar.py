"""`tar` as `kubectl cp` runs it in a simulated container: archives of its mounted files."""

from __future__ import annotations

import io
import tarfile

from pinnace.kubelet.tar import run_tar
from pinnace.kubelet.volumes import Filesystem

FILES = Filesystem([("/etc/cfg", {"a": "1", "sub/b": "two"})])


def test_tar_cf_archives_files_and_directories_without_the_leading_slash() -> None:
    run = run_tar(["cf", "-", "/etc/cfg"], FILES, 1_700_000_000.0)
    assert run is not None and run.status == 0
    assert run.stderr == "tar: removing leading '/' from member names\n"
    with tarfile.open(fileobj=io.BytesIO(run.stdout)) as archive:
        members = {m.name: m for m in archive.getmembers()}
        assert sorted(members) == ["etc/cfg", "etc/cfg/a", "etc/cfg/sub", "etc/cfg/sub/b"]
        assert members["etc/cfg/sub"].isdir() and members["etc/cfg/a"].mtime == 1_700_000_000
        extracted = archive.extractfile("etc/cfg/sub/b")
        assert extracted is not None and extracted.read() == b"two"


def test_a_missing_path_and_writing_fail_as_busybox_tar_does() -> None:
    missing = run_tar(["cf", "-", "/nope"], FILES, 0.0)
    assert missing is not None
    assert (missing.status, missing.stderr) == (1, "tar: /nope: No such file or directory\n")
    writing = run_tar(["-xmf", "-", "-C", "/tmp"], FILES, 0.0)
    assert writing is not None and writing.status == 1
    assert run_tar(["tvf", "archive.tar"], FILES, 0.0) is None  # not a form it has
