//go:build tools

// Package tools records the kube-apiserver and kubectl commands as
// dependencies so that `go build k8s.io/kubernetes/cmd/...` resolves inside
// this module. kubectl renders and server-side dry-runs the deploy/ overlays.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
