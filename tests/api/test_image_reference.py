"""Image references as distribution/reference v0.6.0 parses them (normalize_test.go's and
reference_test.go's cases), with the wording the kubelet reports for InvalidImageName."""

from __future__ import annotations

import pytest

from pinnace.api.core.image_reference import image_name_error


@pytest.mark.parametrize(
    "image",
    [
        "nginx",
        "nginx:1.27",
        "registry.k8s.io/pause:3.10",
        "localhost:5000/app",
        "UPPER/app",  # an upper-case first part is a registry host
        "index.docker.io/library/busybox",
        "nginx@sha256:" + "a" * 64,
    ],
)
def test_references_that_parse(image: str) -> None:
    assert image_name_error(image) is None


@pytest.mark.parametrize(
    ("image", "error"),
    [
        ("bad image", "invalid reference format"),
        ("nginx::1.27", "invalid reference format"),
        ("nginx:", "invalid reference format"),
        (
            "Nginx:1.27",
            "invalid reference format: repository name (library/Nginx) must be lowercase",
        ),
        (
            "quay.io/Team/app:1.0",
            "invalid reference format: repository name (Team/app) must be lowercase",
        ),
        ("nginx@sha256:" + "a" * 63, "invalid checksum digest length"),
        ("nginx@sha256:" + "A" * 64, "invalid checksum digest format"),
        ("nginx@md5:" + "a" * 32, "unsupported digest algorithm"),
        (
            "a" * 64,
            f"invalid repository name ({'a' * 64}), cannot specify 64-byte hexadecimal strings",
        ),
        ("app/" + "a" * 256, "repository name must not be more than 255 characters"),
    ],
)
def test_references_that_do_not_parse(image: str, error: str) -> None:
    assert image_name_error(image) == f'couldn\'t parse image name "{image}": {error}'
