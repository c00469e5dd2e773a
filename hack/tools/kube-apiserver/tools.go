//go:build tools

// Package tools records the kube-apiserver command as a dependency so that
// `go build k8s.io/kubernetes/cmd/kube-apiserver` resolves inside this module.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
