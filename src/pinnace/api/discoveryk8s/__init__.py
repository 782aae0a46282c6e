"""The discovery.k8s.io API group (named apart from `pinnace.api.discovery`, the discovery
documents)."""
