// Package architecture holds the module's architecture rules, as one
// table test over the import graph of its non-test files (rules_test.go):
// which package may import which. It has no code of its own; the rules
// are in its tests so that `go test ./...` checks them.
package architecture
