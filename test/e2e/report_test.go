package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSplicedSections: a thresholds or disruptions run puts its section
// into the default run's page, in place of the one there; a default run
// keeps each as it finds it, or says it was not run.
func TestSplicedSections(t *testing.T) {
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
	// section is the page's marked section of a scale.
	section := func(page, scale string) string {
		begin, end := sectionMarks(scale)
		from, to := strings.Index(page, begin), strings.Index(page, end)
		if strings.Count(page, begin) != 1 || to < from {
			t.Fatalf("no single %s section:\n%s", scale, page)
		}
		return page[from:to]
	}
	first := read()
	for _, run := range splicedRuns {
		_, end := sectionMarks(run.scale)
		if !strings.Contains(section(first, run.scale), "Not run yet") || strings.Index(first, end) > strings.Index(first, "## Checks") {
			t.Fatalf("a first default page has no %s placeholder before its checks:\n%s", run.scale, first)
		}
	}
	runs := map[string]*report{scaleThresholds: newThresholdsReport(), scaleDisruptions: newDisruptionsReport()}
	for _, run := range splicedRuns {
		r := runs[run.scale]
		for _, table := range []string{"| first |\n", "| second |\n"} {
			r.section = func(summary bool) string { return run.heading + table }
			if err := r.spliceInto(page); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, again := range []bool{false, true} {
		if again {
			// A default run keeps both.
			if err := def.write(page); err != nil {
				t.Fatal(err)
			}
		}
		got := read()
		for _, run := range splicedRuns {
			s := section(got, run.scale)
			if !strings.Contains(s, run.heading+"| second |") || strings.Contains(s, "| first |") || strings.Contains(s, "Not run yet") {
				t.Fatalf("after two %s runs (and a default run: %v):\n%s", run.scale, again, got)
			}
		}
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
