"""Request bodies in Kubernetes' protobuf encoding, for the kinds kubectl sends that way.

client-go's typed clients (`kubectl create namespace`, `create deployment`, `create job`,
`create cronjob`, `create configmap`, `create secret`, `create serviceaccount`, `autoscale`,
`drain`'s evictions, `create role` and the other RBAC kinds, `auth can-i` and `auth whoami`'s
reviews, `create token`'s TokenRequest, `create ingress`) send
`application/vnd.kubernetes.protobuf`: the magic `k8s\\x00`, then a runtime.Unknown whose
`raw` is the object's message. Pinnace reads those
bodies into the same JSON objects the JSON decoder gives, for the messages listed here (field
numbers are those of k8s.io/api's generated.proto); a field Pinnace does not know is skipped,
as protobuf allows. Responses are always JSON, which every such client also accepts.
"""

from __future__ import annotations

import base64
from typing import Any, NamedTuple

from pinnace.api import status
from pinnace.clock import format_time

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

# Each message: field number -> "jsonName:type", where type is a scalar (string, int, bool,
# bytes), time, quantity, intorstring, map:<value type> or another message; "*" after the type
# marks a repeated field, "!" a field whose zero value is kept. Go's protobuf encoding writes
# every non-pointer field, zero or not, where JSON leaves zero values out (omitempty); so zero
# scalars are dropped unless the field is a pointer (present means set) or always in JSON.
# A message field without a name is an embedded struct whose fields JSON inlines.
_SCHEMA: dict[str, dict[int, str]] = {
    "Unknown": {1: "typeMeta:TypeMeta", 2: "raw:bytes"},
    "TypeMeta": {1: "apiVersion:string", 2: "kind:string"},
    "ObjectMeta": {
        1: "name:string",
        2: "generateName:string",
        3: "namespace:string",
        5: "uid:string",
        6: "resourceVersion:string",
        7: "generation:int",
        9: "deletionTimestamp:time",
        10: "deletionGracePeriodSeconds:int!",
        11: "labels:map:string",
        12: "annotations:map:string",
        13: "ownerReferences:OwnerReference*",
        14: "finalizers:string*",
    },
    "OwnerReference": {
        1: "kind:string!",
        3: "name:string!",
        4: "uid:string!",
        5: "apiVersion:string!",
        6: "controller:bool!",
        7: "blockOwnerDeletion:bool!",
    },
    "Time": {1: "seconds:int", 2: "nanos:int"},
    "Quantity": {1: "string:string"},
    "IntOrString": {1: "type:int", 2: "intVal:int", 3: "strVal:string"},
    "LabelSelector": {1: "matchLabels:map:string", 2: "matchExpressions:LabelSelectorRequirement*"},
    "LabelSelectorRequirement": {1: "key:string!", 2: "operator:string!", 3: "values:string*"},
    "Namespace": {1: "metadata:ObjectMeta", 2: "spec:NamespaceSpec", 3: "status:NamespaceStatus"},
    "NamespaceSpec": {1: "finalizers:string*"},
    "NamespaceStatus": {1: "phase:string"},
    "ConfigMap": {
        1: "metadata:ObjectMeta",
        2: "data:map:string",
        3: "binaryData:map:bytes",
        4: "immutable:bool!",
    },
    "Secret": {
        1: "metadata:ObjectMeta",
        2: "data:map:bytes",
        3: "type:string",
        4: "stringData:map:string",
        5: "immutable:bool!",
    },
    "ServiceAccount": {
        1: "metadata:ObjectMeta",
        2: "secrets:ObjectReference*",
        3: "imagePullSecrets:LocalObjectReference*",
        4: "automountServiceAccountToken:bool!",
    },
    "ObjectReference": {
        1: "kind:string",
        2: "namespace:string",
        3: "name:string",
        4: "uid:string",
        5: "apiVersion:string",
        6: "resourceVersion:string",
        7: "fieldPath:string",
    },
    "LocalObjectReference": {1: "name:string"},
    "PriorityClass": {
        1: "metadata:ObjectMeta",
        2: "value:int!",
        3: "globalDefault:bool",
        4: "description:string",
        5: "preemptionPolicy:string!",
    },
    "ResourceQuota": {1: "metadata:ObjectMeta", 2: "spec:ResourceQuotaSpec"},
    "ResourceQuotaSpec": {1: "hard:map:quantity", 2: "scopes:string*"},
    "Eviction": {1: "metadata:ObjectMeta", 2: "deleteOptions:DeleteOptions"},
    "DeleteOptions": {
        1: "gracePeriodSeconds:int!",
        2: "preconditions:Preconditions",
        3: "orphanDependents:bool!",
        4: "propagationPolicy:string!",
        5: "dryRun:string*",
    },
    "Preconditions": {1: "uid:string!", 2: "resourceVersion:string!"},
    "PodTemplateSpec": {1: "metadata:ObjectMeta", 2: "spec:PodSpec"},
    "PodSpec": {
        2: "containers:Container*",
        3: "restartPolicy:string",
        4: "terminationGracePeriodSeconds:int!",
        5: "activeDeadlineSeconds:int!",
        6: "dnsPolicy:string",
        7: "nodeSelector:map:string",
        8: "serviceAccountName:string",
        10: "nodeName:string",
        11: "hostNetwork:bool",
        19: "schedulerName:string",
        20: "initContainers:Container*",
        22: "tolerations:Toleration*",
        24: "priorityClassName:string",
        25: "priority:int!",
    },
    "Container": {
        1: "name:string!",
        2: "image:string",
        3: "command:string*",
        4: "args:string*",
        5: "workingDir:string",
        6: "ports:ContainerPort*",
        7: "env:EnvVar*",
        8: "resources:ResourceRequirements",
        13: "terminationMessagePath:string",
        14: "imagePullPolicy:string",
        20: "terminationMessagePolicy:string",
    },
    "ContainerPort": {
        1: "name:string",
        2: "hostPort:int",
        3: "containerPort:int!",
        4: "protocol:string",
        5: "hostIP:string",
    },
    "EnvVar": {1: "name:string!", 2: "value:string"},
    "ResourceRequirements": {1: "limits:map:quantity", 2: "requests:map:quantity"},
    "Toleration": {
        1: "key:string",
        2: "operator:string",
        3: "value:string",
        4: "effect:string",
        5: "tolerationSeconds:int!",
    },
    "Deployment": {1: "metadata:ObjectMeta", 2: "spec:DeploymentSpec"},
    "DeploymentSpec": {
        1: "replicas:int!",
        2: "selector:LabelSelector",
        3: "template:PodTemplateSpec",
        4: "strategy:DeploymentStrategy",
        5: "minReadySeconds:int",
        6: "revisionHistoryLimit:int!",
        7: "paused:bool",
        9: "progressDeadlineSeconds:int!",
    },
    "DeploymentStrategy": {1: "type:string", 2: "rollingUpdate:RollingUpdateDeployment"},
    "RollingUpdateDeployment": {1: "maxUnavailable:intorstring", 2: "maxSurge:intorstring"},
    "Job": {1: "metadata:ObjectMeta", 2: "spec:JobSpec"},
    "JobSpec": {
        1: "parallelism:int!",
        2: "completions:int!",
        3: "activeDeadlineSeconds:int!",
        4: "selector:LabelSelector",
        5: "manualSelector:bool!",
        6: "template:PodTemplateSpec",
        7: "backoffLimit:int!",
        8: "ttlSecondsAfterFinished:int!",
    },
    "CronJob": {1: "metadata:ObjectMeta", 2: "spec:CronJobSpec"},
    "CronJobSpec": {
        1: "schedule:string",
        2: "startingDeadlineSeconds:int!",
        3: "concurrencyPolicy:string",
        4: "suspend:bool!",
        5: "jobTemplate:JobTemplateSpec",
        6: "successfulJobsHistoryLimit:int!",
        7: "failedJobsHistoryLimit:int!",
        8: "timeZone:string!",
    },
    "JobTemplateSpec": {1: "metadata:ObjectMeta", 2: "spec:JobSpec"},
    "PodDisruptionBudget": {1: "metadata:ObjectMeta", 2: "spec:PodDisruptionBudgetSpec"},
    "PodDisruptionBudgetSpec": {
        1: "minAvailable:intorstring!",
        2: "selector:LabelSelector",
        3: "maxUnavailable:intorstring!",
        4: "unhealthyPodEvictionPolicy:string!",
    },
    "HorizontalPodAutoscaler": {1: "metadata:ObjectMeta", 2: "spec:HorizontalPodAutoscalerSpec"},
    "HorizontalPodAutoscalerSpec": {
        1: "scaleTargetRef:CrossVersionObjectReference",
        2: "minReplicas:int!",
        3: "maxReplicas:int!",
        4: "targetCPUUtilizationPercentage:int!",
    },
    "CrossVersionObjectReference": {1: "kind:string!", 2: "name:string!", 3: "apiVersion:string"},
    "Service": {1: "metadata:ObjectMeta", 2: "spec:ServiceSpec"},
    "ServiceSpec": {
        1: "ports:ServicePort*",
        2: "selector:map:string",
        3: "clusterIP:string",
        4: "type:string",
        5: "externalIPs:string*",
        7: "sessionAffinity:string",
        8: "loadBalancerIP:string",
        9: "loadBalancerSourceRanges:string*",
        10: "externalName:string",
        11: "externalTrafficPolicy:string",
        12: "healthCheckNodePort:int",
        13: "publishNotReadyAddresses:bool",
        14: "sessionAffinityConfig:SessionAffinityConfig",
        17: "ipFamilyPolicy:string!",
        18: "clusterIPs:string*",
        19: "ipFamilies:string*",
        20: "allocateLoadBalancerNodePorts:bool!",
        21: "loadBalancerClass:string!",
        22: "internalTrafficPolicy:string!",
        23: "trafficDistribution:string!",
    },
    "ServicePort": {
        1: "name:string",
        2: "protocol:string",
        3: "port:int",
        4: "targetPort:intorstring",
        5: "nodePort:int",
        6: "appProtocol:string!",
    },
    "SessionAffinityConfig": {1: "clientIP:ClientIPConfig"},
    "ClientIPConfig": {1: "timeoutSeconds:int!"},
    "Role": {1: "metadata:ObjectMeta", 2: "rules:PolicyRule*"},
    "ClusterRole": {
        1: "metadata:ObjectMeta",
        2: "rules:PolicyRule*",
        3: "aggregationRule:AggregationRule",
    },
    "AggregationRule": {1: "clusterRoleSelectors:LabelSelector*"},
    "PolicyRule": {
        1: "verbs:string*",
        2: "apiGroups:string*",
        3: "resources:string*",
        4: "resourceNames:string*",
        5: "nonResourceURLs:string*",
    },
    "RoleBinding": {1: "metadata:ObjectMeta", 2: "subjects:Subject*", 3: "roleRef:RoleRef"},
    "RoleRef": {1: "apiGroup:string!", 2: "kind:string!", 3: "name:string!"},
    "Subject": {1: "kind:string!", 2: "apiGroup:string", 3: "name:string!", 4: "namespace:string"},
    "SelfSubjectAccessReview": {1: "metadata:ObjectMeta", 2: "spec:SelfSubjectAccessReviewSpec"},
    "SelfSubjectAccessReviewSpec": {
        1: "resourceAttributes:ResourceAttributes",
        2: "nonResourceAttributes:NonResourceAttributes",
    },
    "ResourceAttributes": {
        1: "namespace:string",
        2: "verb:string",
        3: "group:string",
        4: "version:string",
        5: "resource:string",
        6: "subresource:string",
        7: "name:string",
    },
    "NonResourceAttributes": {1: "path:string", 2: "verb:string"},
    "SubjectAccessReview": {1: "metadata:ObjectMeta", 2: "spec:SubjectAccessReviewSpec"},
    "SubjectAccessReviewSpec": {
        1: "resourceAttributes:ResourceAttributes",
        2: "nonResourceAttributes:NonResourceAttributes",
        3: "user:string",
        4: "groups:string*",
        6: "uid:string",
    },
    "SelfSubjectRulesReview": {1: "metadata:ObjectMeta", 2: "spec:SelfSubjectRulesReviewSpec"},
    "SelfSubjectRulesReviewSpec": {1: "namespace:string"},
    "SelfSubjectReview": {1: "metadata:ObjectMeta"},
    "TokenRequest": {1: "metadata:ObjectMeta", 2: "spec:TokenRequestSpec"},
    "TokenRequestSpec": {
        1: "audiences:string*",
        3: "boundObjectRef:BoundObjectReference",
        4: "expirationSeconds:int!",
    },
    "BoundObjectReference": {
        1: "kind:string",
        2: "apiVersion:string",
        3: "name:string",
        4: "uid:string",
    },
    "TokenReview": {1: "metadata:ObjectMeta", 2: "spec:TokenReviewSpec"},
    "TokenReviewSpec": {1: "token:string", 2: "audiences:string*"},
    "Ingress": {1: "metadata:ObjectMeta", 2: "spec:IngressSpec"},
    "IngressSpec": {
        1: "defaultBackend:IngressBackend",
        2: "tls:IngressTLS*",
        3: "rules:IngressRule*",
        4: "ingressClassName:string!",
    },
    "IngressTLS": {1: "hosts:string*", 2: "secretName:string"},
    "IngressRule": {1: "host:string", 2: ":IngressRuleValue"},
    "IngressRuleValue": {1: "http:HTTPIngressRuleValue"},
    "HTTPIngressRuleValue": {1: "paths:HTTPIngressPath*"},
    "HTTPIngressPath": {1: "path:string", 2: "backend:IngressBackend", 3: "pathType:string!"},
    "IngressBackend": {3: "resource:TypedLocalObjectReference", 4: "service:IngressServiceBackend"},
    "IngressServiceBackend": {1: "name:string", 2: "port:ServiceBackendPort"},
    "ServiceBackendPort": {1: "name:string", 2: "number:int"},
    "TypedLocalObjectReference": {1: "apiGroup:string!", 2: "kind:string", 3: "name:string"},
}

KINDS = {
    ("v1", "Namespace"): "Namespace",
    ("v1", "ConfigMap"): "ConfigMap",
    ("v1", "Service"): "Service",
    ("v1", "Secret"): "Secret",
    ("v1", "ServiceAccount"): "ServiceAccount",
    ("v1", "ResourceQuota"): "ResourceQuota",
    ("scheduling.k8s.io/v1", "PriorityClass"): "PriorityClass",
    ("policy/v1", "Eviction"): "Eviction",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
    ("apps/v1", "Deployment"): "Deployment",
    ("batch/v1", "Job"): "Job",
    ("batch/v1", "CronJob"): "CronJob",
    ("policy/v1", "PodDisruptionBudget"): "PodDisruptionBudget",
    ("autoscaling/v1", "HorizontalPodAutoscaler"): "HorizontalPodAutoscaler",
    ("rbac.authorization.k8s.io/v1", "Role"): "Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "RoleBinding",
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "SubjectAccessReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "SubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authentication.k8s.io/v1", "SelfSubjectReview"): "SelfSubjectReview",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
    ("authentication.k8s.io/v1", "TokenReview"): "TokenReview",
    ("networking.k8s.io/v1", "Ingress"): "Ingress",
}


class _Field(NamedTuple):
    name: str
    kind: str
    repeated: bool
    keep_zero: bool


def _parse_field(spec: str) -> _Field:
    name, _, kind = spec.partition(":")
    keep_zero = kind.endswith("!")
    kind = kind.rstrip("!")
    repeated = kind.endswith("*")
    return _Field(name, kind.rstrip("*"), repeated, keep_zero)


MESSAGES = {
    message: {number: _parse_field(spec) for number, spec in fields.items()}
    for message, fields in _SCHEMA.items()
}


class _Malformed(ValueError):
    pass


def decode(data: bytes) -> dict[str, Any]:
    """The object a protobuf body carries, as JSON; 400 when it does not parse, 415 for a
    kind Pinnace cannot read in protobuf."""
    if not data.startswith(MAGIC):
        raise status.bad_request("provided data does not appear to be a protobuf message")
    try:
        unknown = _message(memoryview(data)[len(MAGIC) :], "Unknown")
        type_meta = unknown.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        message = KINDS.get((api_version, kind))
        if message is None:
            raise status.StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - {kind} in {api_version} "
                "is only accepted as application/json or application/yaml",
            )
        obj = _message(memoryview(unknown.get("raw", b"")), message)
    except _Malformed as e:
        raise status.bad_request(f"unable to decode the protobuf body: {e}") from None
    return {"apiVersion": api_version, "kind": kind, **obj}


def _varint(data: memoryview, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data) or shift > 63:
            raise _Malformed("truncated varint")
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def _fields(data: memoryview) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) in order: ints for varints, bytes otherwise."""
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: int | memoryview
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise _Malformed("truncated field")
            value, i = data[i : i + size], i + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, i = data[i : i + width], i + width
        else:
            raise _Malformed(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _message(data: memoryview, name: str) -> dict[str, Any]:
    schema = MESSAGES[name]
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        known = schema.get(number)
        if known is None:
            continue
        if known.kind.startswith("map:"):
            key, item = _map_entry(value, known.kind[4:])
            obj.setdefault(known.name, {})[key] = item
            continue
        decoded = _value(value, wire, known.kind)
        if not known.name:
            obj.update(decoded)
        elif known.repeated:
            obj.setdefault(known.name, []).append(decoded)
        elif decoded not in ("", 0, False, None) or known.keep_zero:
            obj[known.name] = decoded
    return obj


def _value(value: Any, wire: int, kind: str) -> Any:
    if kind == "int":
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "bool":
        return bool(value)
    if wire != 2:
        raise _Malformed(f"a {kind} field is not length-delimited")
    if kind == "string":
        return bytes(value).decode("utf-8", "replace")
    if kind == "bytes":
        return bytes(value)
    if kind == "time":
        seconds = _message(value, "Time").get("seconds", 0)
        return format_time(seconds) if seconds else None
    if kind == "intorstring":
        parts = _message(value, "IntOrString")
        return parts.get("strVal", "") if parts.get("type") else parts.get("intVal", 0)
    if kind == "quantity":
        return _message(value, "Quantity").get("string", "0")
    return _message(value, kind)


def _map_entry(data: memoryview, item_kind: str) -> tuple[str, Any]:
    key, item = "", None
    for number, wire, value in _fields(data):
        if number == 1:
            key = _value(value, wire, "string")
        elif number == 2:
            item = _value(value, wire, item_kind)
    if item_kind == "bytes":
        return key, base64.b64encode(item or b"").decode()
    return key, "" if item is None else item
