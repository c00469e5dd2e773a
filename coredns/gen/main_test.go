package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent fails when plugin.cfg changed without
// `make generate`.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	want, err := generateFile("../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../plugins/zplugins.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("coredns/plugins/zplugins.go is stale: run `make generate`")
	}
}

func TestParseRejectsBadLines(t *testing.T) {
	for _, in := range []string{"noseparator\n", "a:b\na:c\n", ":x\n"} {
		if _, err := parse(strings.NewReader(in)); err == nil {
			t.Errorf("parse(%q): want error", in)
		}
	}
}

func TestParseResolvesStockPlugins(t *testing.T) {
	ds, err := parse(strings.NewReader("# c\n\nprometheus:metrics\nx:example.com/x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].importPath != corePluginPrefix+"metrics" || ds[1].importPath != "example.com/x" {
		t.Fatalf("got %+v", ds)
	}
}
