"""The networking.k8s.io API group."""
