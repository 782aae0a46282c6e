"""The core/v1 API group: the kinds served under apiVersion v1."""
