package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestThresholdsSection: a thresholds run puts its section into the
// default run's page, in place of the one there; a default run keeps it
// as it finds it, or says it was not run.
func TestThresholdsSection(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "e2e.md")
	def := newReport()
	def.assert("a", "check", true, "")
	if err := def.write(page); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read(); !strings.Contains(got, "Not run yet") || strings.Index(got, sectionEnd) > strings.Index(got, "## Checks") {
		t.Fatalf("a first default page has no placeholder before its checks:\n%s", got)
	}
	thr := newThresholdsReport()
	for _, table := range []string{"| first |\n", "| second |\n"} {
		thr.section = func(summary bool) string { return thresholdsHeading + table }
		if err := thr.spliceInto(page); err != nil {
			t.Fatal(err)
		}
	}
	got := read()
	if strings.Count(got, sectionBegin) != 1 || !strings.Contains(got, "| second |") || strings.Contains(got, "| first |") || strings.Contains(got, "Not run yet") {
		t.Fatalf("after two thresholds runs:\n%s", got)
	}
	if err := def.write(page); err != nil {
		t.Fatal(err)
	}
	if again := read(); !strings.Contains(again, "| second |") || strings.Count(again, sectionBegin) != 1 {
		t.Fatalf("a default run dropped the thresholds section:\n%s", again)
	}
}

// TestKeepUsageOnPage: the committed page says what a run would write
// about -keep, so that the usage is there before the next run.
func TestKeepUsageOnPage(t *testing.T) {
	page, err := os.ReadFile("../../docs/e2e.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), keepUsage) {
		t.Errorf("docs/e2e.md lacks the -keep usage of keepUsage (report.go):\n%s", keepUsage)
	}
}
