"""`tar` as `kubectl cp` runs it in a simulated container: archives of its mounted files."""

from __future__ import annotations

import io
import tarfile

from pinnace.kubelet.tar import TarRun, run_tar
from pinnace.kubelet.volumes import Filesystem, WritableFiles

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


def archive(**members: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name.replace("__", "/"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_missing_path_and_a_form_it_does_not_have() -> None:
    missing = run_tar(["cf", "-", "/nope"], FILES, 0.0)
    assert missing is not None
    assert (missing.status, missing.stderr) == (1, "tar: /nope: No such file or directory\n")
    assert run_tar(["tvf", "archive.tar"], FILES, 0.0) is None


def test_tar_xf_unpacks_stdin_into_writable_files_and_cf_archives_them_back() -> None:
    files = Filesystem([("/", WritableFiles()), ("/data", WritableFiles())])
    data = archive(notes=b"hello\n", dir__deep=b"\xff\x00bin")
    unpacked = run_tar(["-xmf", "-", "-C", "/data/in"], files, 0.0, data)
    assert unpacked is not None and (unpacked.status, unpacked.stderr) == (0, "")
    assert files.read("/data/in/notes") == "hello\n" and files.list("/data/in") == ["dir", "notes"]
    assert run_tar(["xf", "-"], files, 0.0, archive(top=b"x")) == TarRun(b"", "", 0)
    assert files.read("/top") == "x"
    back = run_tar(["cf", "-", "/data/in"], files, 0.0)
    assert back is not None
    with tarfile.open(fileobj=io.BytesIO(back.stdout)) as tar:
        deep = tar.extractfile("data/in/dir/deep")
        assert deep is not None and deep.read() == b"\xff\x00bin"


def test_tar_xf_into_a_read_only_mount_fails_as_busybox_tar_does() -> None:
    files = Filesystem([("/", WritableFiles()), ("/etc/cfg", {"a": "1"})])
    refused = run_tar(["xmf", "-", "-C", "/etc/cfg"], files, 0.0, archive(b=b"2"))
    assert refused == TarRun(b"", "tar: can't open 'b': Read-only file system\n", 1)
    assert files.read("/etc/cfg/b") is None
    not_dir = run_tar(["xf", "-", "-C", "/etc/cfg/a"], files, 0.0, archive(b=b"2"))
    assert not_dir == TarRun(
        b"", "tar: can't change directory to '/etc/cfg/a': Not a directory\n", 1
    )
