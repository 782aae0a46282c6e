"""The rbac.authorization.k8s.io API group."""
