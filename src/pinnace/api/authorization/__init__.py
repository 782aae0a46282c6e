"""The authorization.k8s.io and authentication.k8s.io review kinds: requests answered at once,
never stored."""
