"""The storage.k8s.io API group."""
