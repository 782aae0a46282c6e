"""Authentication, authorization and the RBAC policy of the API server (kube-apiserver v1.32's
k8s.io/apiserver/pkg/authentication, pkg/authorization and plugin/pkg/auth/authorizer/rbac)."""
