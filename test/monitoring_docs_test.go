package test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// errNoTable means a Markdown section has no table of the kind asked.
var errNoTable = errors.New("no table")

// markdownTable returns the rows of the first table in the section of
// doc under heading whose header row starts with firstColumn, each row
// as its cells with surrounding spaces and backticks trimmed.
func markdownTable(doc []byte, heading, firstColumn string) ([][]string, error) {
	_, section, ok := bytes.Cut(doc, []byte("\n"+heading+"\n"))
	if !ok {
		return nil, errors.New("no section " + heading)
	}
	if end := bytes.Index(section, []byte("\n## ")); end >= 0 {
		section = section[:end]
	}
	var rows [][]string
	in := false
	for _, line := range strings.Split(string(section), "\n") {
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`"))
		}
		switch {
		case !in && cells[0] == firstColumn:
			in = true
		case in && strings.Trim(cells[0], "-:") == "":
		case in:
			rows = append(rows, cells)
		}
	}
	if !in {
		return nil, errNoTable
	}
	return rows, nil
}

// TestMonitoringDocs: the alerts table of docs/operations.md names every
// alert of the PrometheusRule, once, with its severity and its `for`, and
// no other; the panels table names every panel of the dashboard, once,
// and no other.
func TestMonitoringDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	const section = "## Metrics and alerts"
	rows, err := markdownTable(doc, section, "alert")
	if err != nil {
		t.Fatalf("docs/operations.md, %s: alerts table: %v", section, err)
	}
	var got, want []string
	for _, r := range rows {
		if len(r) < 3 {
			t.Fatalf("alerts table row %v: want alert | severity | for | ...", r)
		}
		got = append(got, strings.Join(r[:3], " "))
	}
	for _, a := range readPrometheusRule(t).alerts() {
		want = append(want, strings.Join([]string{a.Alert, a.Labels["severity"], a.For}, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/operations.md lists the alerts (alert severity for)\n%s\nthe PrometheusRule has\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	rows, err = markdownTable(doc, section, "panel")
	if err != nil {
		t.Fatalf("docs/operations.md, %s: panels table: %v", section, err)
	}
	got, want = nil, nil
	for _, r := range rows {
		got = append(got, r[0])
	}
	_, d := readDashboard(t)
	for _, p := range d.allPanels() {
		want = append(want, p.Title)
	}
	if !slices.Equal(got, want) {
		t.Errorf("docs/operations.md lists the panels\n%s\nthe dashboard has\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
