"""Pod Security levels, versions and a namespace's policy from its labels, as
k8s.io/pod-security-admission/api (helpers.go, constants.go) in v1.32.

A namespace's `pod-security.kubernetes.io/<mode>` label names a level (privileged, baseline,
restricted) and `<mode>-version` the policy version (`latest` or `v1.<minor>`) for each mode:
enforce, audit and warn. A mode without a label keeps the configuration's default
(privileged:latest without an admission configuration file). A label that cannot be parsed is
an error; enforce then reads it as restricted (or latest), audit and warn as privileged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api.field import FieldError, Path, invalid

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
"""By strictness, least strict first."""

LATEST = 1 << 30
"""The minor version `latest` stands for: newer than any release."""

LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")

LEVEL_WANTED = "must be one of " + ", ".join(LEVELS)
VERSION_WANTED = 'must be "latest" or "v1.x"'
_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")
_LABELS = Path("metadata", "labels")


@dataclass(frozen=True, slots=True)
class LevelVersion:
    level: str
    minor: int
    """The policy version's minor (`v1.<minor>`), LATEST for `latest`."""

    def __str__(self) -> str:
        version = "latest" if self.minor == LATEST else f"v1.{self.minor}"
        return f"{self.level}:{version}"


DEFAULT = LevelVersion(PRIVILEGED, LATEST)


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion = DEFAULT
    audit: LevelVersion = DEFAULT
    warn: LevelVersion = DEFAULT

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level

    def equivalent(self, other: Policy) -> bool:
        """The same levels, and the same versions where they matter (not privileged's)."""
        return all(
            a.level == b.level and (a.level == PRIVILEGED or a.minor == b.minor)
            for a, b in zip(self.modes(), other.modes(), strict=True)
        )

    def modes(self) -> tuple[LevelVersion, LevelVersion, LevelVersion]:
        """Enforce's, audit's and warn's, in MODES' order."""
        return (self.enforce, self.audit, self.warn)


@dataclass(frozen=True)
class Configuration:
    """kube-apiserver's PodSecurityConfiguration (pod-security.admission.config.k8s.io/v1, in
    its --admission-control-config-file): the policy of a namespace without labels, and who
    and what is exempt."""

    defaults: Policy = Policy()
    usernames: frozenset[str] = frozenset()
    namespaces: frozenset[str] = frozenset()
    runtime_classes: frozenset[str] = frozenset()


def has_labels(labels: Mapping[str, Any]) -> bool:
    """Whether any label is Pod Security's (a namespace without one has the default policy)."""
    return any(key.startswith(LABEL_PREFIX) for key in labels)


def policy_to_evaluate(
    labels: Mapping[str, Any], defaults: Policy = Policy()
) -> tuple[Policy, list[FieldError]]:
    """The namespace's policy from its labels (each mode without one as `defaults`), and the
    errors of those that cannot be parsed (the policy is whole even then)."""
    errors: list[FieldError] = []
    modes = {
        mode: _mode(labels, mode, default, errors)
        for mode, default in zip(MODES, defaults.modes(), strict=True)
    }
    return Policy(**modes), errors


def parse_level(value: str) -> str | None:
    return value if value in LEVELS else None


def parse_version(value: str) -> int | None:
    """The minor version `latest` or `v1.<minor>` names (LATEST for `latest`)."""
    if value == "latest":
        return LATEST
    parsed = _VERSION.match(value)
    return None if parsed is None else int(parsed.group(1))


def _mode(
    labels: Mapping[str, Any], mode: str, default: LevelVersion, errors: list[FieldError]
) -> LevelVersion:
    level, minor = default.level, default.minor
    level_label, version_label = LABEL_PREFIX + mode, LABEL_PREFIX + mode + "-version"
    if level_label in labels:
        value = str(labels[level_label])
        parsed_level = parse_level(value)
        if parsed_level is None:
            errors.append(invalid(_LABELS.key(level_label), value, LEVEL_WANTED))
            level = RESTRICTED if mode == "enforce" else PRIVILEGED  # audit and warn fail open
        else:
            level = parsed_level
    if version_label in labels:
        value = str(labels[version_label])
        parsed_minor = parse_version(value)
        if parsed_minor is None:
            errors.append(invalid(_LABELS.key(version_label), value, VERSION_WANTED))
            minor = LATEST
        else:
            minor = parsed_minor
    return LevelVersion(level, minor)


def stricter(a: str, b: str) -> bool:
    """Whether level `a` is stricter than level `b`."""
    return LEVELS.index(a) > LEVELS.index(b)
