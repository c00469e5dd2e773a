package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schemadns/schemadns/test/e2e/report"
)

// TestSplicedSections: a thresholds or disruptions run puts its section
// into the default run's page, in place of the one there; a default run
// keeps each as it finds it, or says it was not run.
func TestSplicedSections(t *testing.T) {
	dir := t.TempDir()
	page := filepath.Join(dir, "e2e.md")
	def := newReport(scaleDefault)
	def.Assert("a", "check", true, "")
	if err := def.Write(page); err != nil {
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
		begin, end := report.SectionMarks(scale)
		from, to := strings.Index(page, begin), strings.Index(page, end)
		if strings.Count(page, begin) != 1 || to < from {
			t.Fatalf("no single %s section:\n%s", scale, page)
		}
		return page[from:to]
	}
	first := read()
	for _, run := range splicedRuns {
		_, end := report.SectionMarks(run.Scale)
		if !strings.Contains(section(first, run.Scale), "Not run yet") || strings.Index(first, end) > strings.Index(first, "## Checks") {
			t.Fatalf("a first default page has no %s placeholder before its checks:\n%s", run.Scale, first)
		}
	}
	runs := map[string]*report.Report{scaleThresholds: newReport(scaleThresholds), scaleDisruptions: newReport(scaleDisruptions)}
	for _, run := range splicedRuns {
		r := runs[run.Scale]
		for _, table := range []string{"| first |\n", "| second |\n"} {
			r.SetSection(func(summary bool) string { return run.Heading + table })
			if err := r.SpliceInto(page); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, again := range []bool{false, true} {
		if again {
			// A default run keeps both.
			if err := def.Write(page); err != nil {
				t.Fatal(err)
			}
		}
		got := read()
		for _, run := range splicedRuns {
			s := section(got, run.Scale)
			if !strings.Contains(s, run.Heading+"| second |") || strings.Contains(s, "| first |") || strings.Contains(s, "Not run yet") {
				t.Fatalf("after two %s runs (and a default run: %v):\n%s", run.Scale, again, got)
			}
		}
	}
}
