"""kube-apiserver v1.32's admission plugins that Pinnace needs, as pure functions.

The request pipeline looks up what a plugin needs (the namespace, PriorityClasses, LimitRanges,
ResourceQuotas, a RuntimeClass) and calls it; no plugin touches storage or the network. A
rejection raises `pinnace.api.status.StatusError` with kube-apiserver's status and message.

- `namespace_lifecycle`: nothing new in missing or terminating namespaces; immortal namespaces.
- `limit_ranger`: LimitRange defaults and min/max/ratio checks for pods.
- `priority`: a pod's priority from its PriorityClass; one globalDefault class.
- `default_tolerations`: the not-ready/unreachable NoExecute tolerations of 300 s.
- `runtime_class`: a pod's overhead and scheduling from its RuntimeClass, which must exist.
- `storage`, `ingress_class`: the default StorageClass of a claim, IngressClass of an Ingress.
- `resource_quota` (with `quota_usage`): ResourceQuota admission and recalculation.
- `pod_security` (with `pod_security_levels`, `pod_security_checks`): PodSecurity, the Pod
  Security Standards a namespace's labels ask for.
"""
