"""Container image references as github.com/distribution/reference (v0.6.0, which Kubernetes
v1.32 vendors) reads them: the grammar, the tag the runtime pulls (`image_tag`, for the API
server's imagePullPolicy default) and why a reference does not parse (`image_name_error`, what
the kubelet's image manager reports as InvalidImageName, through pkg/util/parsers'
ParseImageName and the package's ParseNormalizedNamed)."""

from __future__ import annotations

import re
from functools import lru_cache

from pinnace.api.goquote import quote

_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_IMAGE_REFERENCE = re.compile(
    rf"(?P<name>(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*))"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?"
)
"""reference.ReferenceRegexp; Go's `\\w` is ASCII only."""
_MAX_NAME_LENGTH = 255
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")
_DIGEST_HEX_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
"""The digest algorithms go-digest has (crypto/sha256 and crypto/sha512 are linked into the
kubelet), by the length of their hex encoding."""
_DEFAULT_DOMAIN = "docker.io"


@lru_cache(maxsize=1024)
def image_tag(image: str) -> str:
    """The tag the runtime pulls: "latest" for a bare name, "" when only a digest pins it or
    the reference does not parse. Remembered: the pods of a template share their images, and
    matching the reference is most of defaulting a container."""
    match = _IMAGE_REFERENCE.fullmatch(image)
    if match is None or len(match["name"]) > _MAX_NAME_LENGTH:
        return ""
    if match["tag"]:
        return match["tag"]
    return "" if match["digest"] else "latest"


@lru_cache(maxsize=1024)
def image_name_error(image: str) -> str | None:
    """Why `image` is no image reference (ParseNormalizedNamed's error, as ParseImageName
    wraps it: `couldn't parse image name "Nginx": invalid reference format: …`); None when
    it is one."""
    error = _normalized_name_error(image)
    return None if error is None else f"couldn't parse image name {quote(image)}: {error}"


def _normalized_name_error(image: str) -> str | None:
    if _IDENTIFIER.fullmatch(image):
        return f"invalid repository name ({image}), cannot specify 64-byte hexadecimal strings"
    domain, remainder = _split_docker_domain(image)
    remote = remainder.split(":", 1)[0]
    if remote.lower() != remote:
        return f"invalid reference format: repository name ({remote}) must be lowercase"
    return _parse_error(f"{domain}/{remainder}")


def _split_docker_domain(name: str) -> tuple[str, str]:
    """splitDockerDomain: the registry and the rest, Docker Hub's official images under
    `library/`."""
    first, slash, rest = name.partition("/")
    if not slash or (
        not any(c in first for c in ".:") and first != "localhost" and first.lower() == first
    ):
        domain, remainder = _DEFAULT_DOMAIN, name
    else:
        domain, remainder = first, rest
    if domain == "index.docker.io":
        domain = _DEFAULT_DOMAIN
    if domain == _DEFAULT_DOMAIN and "/" not in remainder:
        remainder = "library/" + remainder
    return domain, remainder


def _parse_error(reference: str) -> str | None:
    """reference.Parse's error for a whole reference, None if it parses."""
    match = _IMAGE_REFERENCE.fullmatch(reference)
    if match is None:
        lower = reference.lower()
        if lower != reference and _IMAGE_REFERENCE.fullmatch(lower):
            return "repository name must be lowercase"
        return "invalid reference format"
    if len(match["path"]) > _MAX_NAME_LENGTH:
        return f"repository name must not be more than {_MAX_NAME_LENGTH} characters"
    digest = match["digest"]
    if digest:
        algorithm, _, encoded = digest.partition(":")
        length = _DIGEST_HEX_LENGTHS.get(algorithm)
        if length is None:
            return "unsupported digest algorithm"
        if len(encoded) != length:
            return "invalid checksum digest length"
        if not re.fullmatch(r"[a-f0-9]+", encoded):
            return "invalid checksum digest format"
    return None
