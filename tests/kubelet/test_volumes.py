"""configMap volumes: the pod waits in ContainerCreating with FailedMount events until its
ConfigMap (and every listed key) exists; its containers see the files at their mount paths,
and the files follow later changes of the ConfigMap, except through a subPath."""

from __future__ import annotations

import re
from typing import Any

from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import EVENTS, Node, pod
from tests.kubelet.test_environment import printed

from pinnace.client import PatchType


def volume_pod(name: str, script: str, volume: dict[str, Any], **mount: Any) -> dict[str, Any]:
    body = pod(name, node="node-1")
    body["spec"]["containers"][0].update(
        image="registry.k8s.io/busybox",
        command=["/bin/sh", "-c", script],
        volumeMounts=[{"name": "config-volume", "mountPath": "/etc/config", **mount}],
    )
    body["spec"]["volumes"] = [{"name": "config-volume", "configMap": volume}]
    body["spec"]["restartPolicy"] = "Never"
    return body


def failed_mounts(node: Node) -> list[str]:
    events = node.run(node.client.list(EVENTS, "default"))["items"]
    return [e["message"] for e in events if e["reason"] == "FailedMount"]


def test_a_missing_config_map_keeps_the_pod_creating_until_it_appears(node: Node) -> None:
    node.create_pod(volume_pod("dapi-test-pod", "ls /etc/config/", {"name": "special-config"}))
    node.settle()
    status = node.get_pod("dapi-test-pod")["status"]
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert "podIP" not in status  # no sandbox before the volumes are mounted (omitempty)
    assert failed_mounts(node) == [
        'MountVolume.SetUp failed for volume "config-volume" : configmap "special-config" not found'
    ]

    data = {"SPECIAL_LEVEL": "very", "SPECIAL_TYPE": "charm"}
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("special-config", **data)))
    node.settle()
    status = node.get_pod("dapi-test-pod")["status"]
    assert status["phase"] == "Succeeded" and status["podIP"]
    assert printed(node, "dapi-test-pod") == ["SPECIAL_LEVEL", "SPECIAL_TYPE"]


def test_items_put_keys_at_paths_and_a_missing_key_fails_the_mount(node: Node) -> None:
    data = {"SPECIAL_LEVEL": "very", "SPECIAL_TYPE": "charm"}
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("special-config", **data)))
    items = [{"key": "SPECIAL_LEVEL", "path": "keys"}, {"key": "SPECIAL_TYPE", "path": "sub/type"}]
    script = "cat /etc/config/keys; echo; ls /etc/config; cat /etc/config/sub/type /etc/config/no"
    node.create_pod(volume_pod("items", script, {"name": "special-config", "items": items}))
    missing = [{"key": "SPECIAL_COLOR", "path": "color"}]
    node.create_pod(volume_pod("missing-key", "true", {"name": "special-config", "items": missing}))
    node.settle()
    assert printed(node, "items") == [
        "very",
        "keys",
        "sub",
        "charm" + "cat: can't open '/etc/config/no': No such file or directory",
    ]
    assert (
        node.get_pod("items")["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
        == 1
    )
    assert failed_mounts(node) == [
        'MountVolume.SetUp failed for volume "config-volume" : '
        "configmap references non-existent config key: SPECIAL_COLOR"
    ]
    assert node.get_pod("missing-key")["status"]["phase"] == "Pending"


def test_an_optional_config_map_that_is_missing_mounts_empty(node: Node) -> None:
    volume = {"name": "nowhere", "optional": True}
    node.create_pod(volume_pod("optional", "ls /etc/config; echo done", volume))
    node.settle()
    assert printed(node, "optional") == ["done"]
    assert failed_mounts(node) == []


def test_mounted_files_follow_the_config_map_but_not_through_a_sub_path(node: Node) -> None:
    # "Updating Configuration via a ConfigMap": a loop printing a mounted file every 10 s
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("sport", sport="football")))
    script = (
        'while true; do echo "$(date) My preferred sport is $(cat /etc/config/sport)";'
        " sleep 10; done;"
    )
    body = volume_pod("configmap-demo-pod", script, {"name": "sport"})
    body["spec"]["containers"][0]["volumeMounts"].append(
        {"name": "config-volume", "mountPath": "/etc/frozen", "subPath": "sport"}
    )
    body["spec"]["containers"].append(
        {
            "name": "frozen",
            "image": "busybox",
            "command": ["sh", "-c", "while true; do cat /etc/frozen; echo; sleep 10; done"],
        }
    )
    body["spec"]["containers"][1]["volumeMounts"] = body["spec"]["containers"][0]["volumeMounts"]
    node.create_pod(body)
    node.settle(25)
    lines = printed(node, "configmap-demo-pod")
    assert len(lines) == 3
    busybox_date = r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d UTC \d{4}"
    assert all(re.fullmatch(busybox_date + " My preferred sport is football", x) for x in lines)
    assert lines[-1].endswith("My preferred sport is football")

    patch = {"data": {"sport": "cricket"}}
    node.run(node.client.patch(CONFIG_MAPS, "default", "sport", patch, PatchType.MERGE))
    node.settle(30)
    assert printed(node, "configmap-demo-pod")[-1].endswith("My preferred sport is cricket")
    uid = node.get_pod("configmap-demo-pod")["metadata"]["uid"]
    frozen = node.agent.workers[uid].container_log("frozen", previous=False)
    assert frozen is not None and {line for _, line in frozen.log} == {"football"}


def expression_pod(name: str, sub_path_expr: str, **env: str) -> dict[str, Any]:
    """A pod whose container prints the files of its subPathExpr mount, with POD_NAME from
    the downward API and `env`."""
    items = [{"key": "greeting", "path": f"{name}/greeting"}]
    body = volume_pod(
        name,
        "ls /etc/config; cat /etc/config/greeting",
        {"name": "greetings", "items": items},
        subPathExpr=sub_path_expr,
    )
    pod_name = {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}
    body["spec"]["containers"][0]["env"] = [
        pod_name,
        *({"name": k, "value": v} for k, v in env.items()),
    ]
    return body


def test_a_sub_path_expr_takes_the_path_its_variables_name(node: Node) -> None:
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("greetings", greeting="hi")))
    node.create_pod(expression_pod("web-0", "$(POD_NAME)"))
    node.settle()
    assert printed(node, "web-0") == ["greeting", "hi"]
    assert node.get_pod("web-0")["status"]["phase"] == "Succeeded"


def test_a_sub_path_expr_that_cannot_be_taken_fails_the_container_start(node: Node) -> None:
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("greetings", greeting="hi")))
    refused = {
        "unset": ("$(POD_NAME)/$(NOWHERE)/$(ALSO)", {}, "missing value for ALSO, NOWHERE"),
        "empty": ("$(EMPTY)", {"EMPTY": ""}, "missing value for EMPTY"),
        "absolute": (
            "$(ROOT)",
            {"ROOT": "/etc"},
            "error SubPath `/etc` must not be an absolute path",
        ),
        "up": (
            "$(UP)/$(POD_NAME)",
            {"UP": ".."},
            "unable to provision SubPath `../up`: must not contain '..'",
        ),
    }
    for name, (expression, env, _) in refused.items():
        node.create_pod(expression_pod(name, expression, **env))
    node.settle()
    events = node.run(node.client.list(EVENTS, "default"))["items"]
    for name, (_, _, message) in refused.items():
        waiting = node.get_pod(name)["status"]["containerStatuses"][0]["state"]["waiting"]
        assert waiting == {"reason": "CreateContainerConfigError", "message": message}
        failed = [
            (e["type"], e["message"])
            for e in events
            if e["involvedObject"]["name"] == name and e["reason"] == "Failed"
        ]
        assert failed == [("Warning", f"Error: {message}")]


def test_a_sub_path_of_an_empty_dir_is_the_volumes_own_directory(node: Node) -> None:
    # The docs' "Using subPath with expanded environment variables", on an emptyDir: what the
    # container writes below its subPathExpr mount is in the volume, under the pod's name.
    script = "echo Hello >> /logs/hello.txt; ls /all; cat /all/pod1/hello.txt /logs/hello.txt"
    body = pod("pod1", node="node-1")
    body["spec"]["containers"][0].update(
        image="busybox:1.28",
        command=["sh", "-c", script],
        env=[{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        volumeMounts=[
            {"name": "workdir1", "mountPath": "/logs", "subPathExpr": "$(POD_NAME)"},
            {"name": "workdir1", "mountPath": "/all"},
        ],
    )
    body["spec"]["volumes"] = [{"name": "workdir1", "emptyDir": {}}]
    body["spec"]["restartPolicy"] = "Never"
    node.create_pod(body)
    node.settle()
    assert printed(node, "pod1") == ["pod1", "Hello", "Hello"]
    assert node.get_pod("pod1")["status"]["phase"] == "Succeeded"


def test_a_sub_path_expr_is_checked_on_a_volume_the_model_has_no_files_for(node: Node) -> None:
    # makeMounts expands every mount's subPathExpr, whatever its volume.
    body = pod("host", node="node-1")
    body["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "host", "mountPath": "/host", "subPathExpr": "$(NOWHERE)"}
    ]
    body["spec"]["volumes"] = [{"name": "host", "hostPath": {"path": "/var/log"}}]
    node.create_pod(body)
    node.settle()
    waiting = node.get_pod("host")["status"]["containerStatuses"][0]["state"]["waiting"]
    message = "missing value for NOWHERE"
    assert waiting == {"reason": "CreateContainerConfigError", "message": message}


def test_a_failing_mount_is_tried_again_after_the_volume_managers_back_off(node: Node) -> None:
    """nestedpendingoperations' back-off: tries at 0, 0.5, 1.5, 3.5, 7.5, 15.5, 31.5 s, each a
    FailedMount (counted on one event); a ConfigMap created in between is mounted at the next
    try, not at once."""
    node.create_pod(volume_pod("late", "ls /etc/config/", {"name": "late-config"}))
    node.settle(16)
    events = node.run(node.client.list(EVENTS, "default"))["items"]
    (failed,) = [e for e in events if e["reason"] == "FailedMount"]
    assert failed["count"] == 6
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("late-config", KEY="v")))
    node.settle(15)
    assert node.get_pod("late")["status"]["phase"] == "Pending"
    node.settle(1)
    assert node.get_pod("late")["status"]["phase"] == "Succeeded"
    assert printed(node, "late") == ["KEY"]
