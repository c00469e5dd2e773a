//go:build tools

// Package tools records the etcd server command as a dependency.
package tools

import _ "go.etcd.io/etcd/server/v3"
