"""kube-apiserver's --admission-control-config-file: an AdmissionConfiguration
(apiserver.config.k8s.io/v1) whose PodSecurity plugin entry holds, inline or in the file its
`path` names, a PodSecurityConfiguration (pod-security.admission.config.k8s.io/v1): the
defaults of a namespace without Pod Security labels and the exemptions. Other plugins' entries
are read past: Pinnace's other plugins take no configuration.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pinnace.apiserver.admission.pod_security_levels import (
    LEVEL_WANTED,
    MODES,
    VERSION_WANTED,
    Configuration,
    LevelVersion,
    Policy,
    parse_level,
    parse_version,
)

_CONFIGURATION_KINDS = {
    "apiserver.config.k8s.io/v1",
    "apiserver.k8s.io/v1alpha1",
}
_POD_SECURITY_VERSIONS = {
    "pod-security.admission.config.k8s.io/v1",
    "pod-security.admission.config.k8s.io/v1beta1",
}


def admission_control_config_file(text: str) -> Configuration:
    """The PodSecurity configuration the file gives (argparse's `type`)."""
    try:
        return _read(Path(text))
    except (OSError, yaml.YAMLError, ValueError) as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _read(path: Path) -> Configuration:
    document = _mapping(yaml.safe_load(path.read_text()), str(path))
    if document.get("kind") != "AdmissionConfiguration" or (
        document.get("apiVersion") not in _CONFIGURATION_KINDS
    ):
        raise ValueError(f"{path}: not an apiserver.config.k8s.io/v1 AdmissionConfiguration")
    for plugin in document.get("plugins") or []:
        plugin = _mapping(plugin, f"{path}: plugins[]")
        if plugin.get("name") != "PodSecurity":
            continue
        configuration = plugin.get("configuration")
        if configuration is None and plugin.get("path"):
            where = path.parent / str(plugin["path"])
            configuration = yaml.safe_load(where.read_text())
        return pod_security_configuration(_mapping(configuration, f"{path}: PodSecurity"))
    return Configuration()


def pod_security_configuration(document: Mapping[str, Any]) -> Configuration:
    """A PodSecurityConfiguration document; unset defaults are privileged:latest."""
    if document.get("kind") != "PodSecurityConfiguration" or (
        document.get("apiVersion") not in _POD_SECURITY_VERSIONS
    ):
        raise ValueError(
            "PodSecurity: not a pod-security.admission.config.k8s.io/v1 PodSecurityConfiguration"
        )
    defaults = _mapping(document.get("defaults") or {}, "defaults")
    modes = {}
    for mode in MODES:
        level = str(defaults.get(mode) or "privileged")
        version = str(defaults.get(f"{mode}-version") or "latest")
        parsed_level, parsed_version = parse_level(level), parse_version(version)
        if parsed_level is None:
            raise ValueError(f"defaults.{mode}: Invalid value: {level!r}: {LEVEL_WANTED}")
        if parsed_version is None:
            raise ValueError(
                f"defaults.{mode}-version: Invalid value: {version!r}: {VERSION_WANTED}"
            )
        modes[mode] = LevelVersion(parsed_level, parsed_version)
    exemptions = _mapping(document.get("exemptions") or {}, "exemptions")
    return Configuration(
        Policy(**modes),
        usernames=frozenset(map(str, exemptions.get("usernames") or ())),
        namespaces=frozenset(map(str, exemptions.get("namespaces") or ())),
        runtime_classes=frozenset(map(str, exemptions.get("runtimeClasses") or ())),
    )


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected a mapping")
    return value
