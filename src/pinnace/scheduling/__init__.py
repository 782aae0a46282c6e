"""Scheduling helpers several components share, as Kubernetes keeps them in
k8s.io/component-helpers/scheduling/corev1 (and the core/v1 types' own methods): taints and
tolerations, node affinity, host ports. The scheduler, the kubelet's admission, the controllers
and the descheduler read a pod's placement constraints through these, so each reads them the
same way.
"""
