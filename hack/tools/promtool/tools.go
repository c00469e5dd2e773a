//go:build tools

// Package tools records the promtool command as a dependency.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
