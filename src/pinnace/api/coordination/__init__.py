"""The coordination.k8s.io API group."""
