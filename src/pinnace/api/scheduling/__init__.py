"""The scheduling.k8s.io API group."""
