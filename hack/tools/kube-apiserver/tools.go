//go:build tools

// Package tools records the Kubernetes commands this project builds as
// dependencies so that `go build k8s.io/kubernetes/cmd/...` resolves inside
// this module: kube-apiserver for the integration tests, kubectl to render
// and server-side dry-run the deploy/ trees, and the node and controller
// binaries of the one-node cluster that `make e2e` runs.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
