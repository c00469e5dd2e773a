package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/bench/internal/mesosbench"
)

// A run of some shapes (SHAPES=S5) can keep the others' figures from the
// page it replaces (-keep-others): the page then says which run measured
// which shapes, so that no figure passes for one of this run's.

// KeepOthers adds to res the shapes of OUT/benchmarks.json that res did not
// measure, in the scale's order, and says so in the page's note.
func KeepOthers(outDir string, res *Results) error {
	b, err := os.ReadFile(filepath.Join(outDir, "benchmarks.json"))
	if err != nil {
		return fmt.Errorf("-keep-others: %w", err)
	}
	var old Results
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("-keep-others: benchmarks.json: %w", err)
	}
	mergeResults(res, &old)
	if note := provenance(res); note != "" {
		res.Note = strings.TrimSpace(res.Note + " " + note)
	}
	return nil
}

// provenance says which earlier run each kept shape comes from: "S1, S2:
// from the run of … (`…`); the other shapes from this run."
func provenance(res *Results) string {
	var order []string
	shapes := map[string][]string{}
	add := func(name, from string) {
		if from == "" {
			return
		}
		if _, ok := shapes[from]; !ok {
			order = append(order, from)
		}
		shapes[from] = append(shapes[from], name)
	}
	for _, sr := range res.Shapes {
		if len(shapes[sr.From]) == 0 || shapes[sr.From][len(shapes[sr.From])-1] != sr.Shape.Name {
			add(sr.Shape.Name, sr.From)
		}
	}
	for _, mr := range res.Mesos {
		add(mr.Shape.Name, mr.From)
	}
	if len(order) == 0 {
		return ""
	}
	var parts []string
	for _, from := range order {
		parts = append(parts, fmt.Sprintf("%s: from the run of %s", strings.Join(shapes[from], ", "), from))
	}
	return strings.Join(parts, "; ") + "; the other shapes from this run."
}

// runName is how the page names a run: its start and its command.
func runName(r *Results) string {
	return fmt.Sprintf("%s (`%s`)", r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Command)
}

// mergeResults puts old's shapes that res lacks into res, and what only
// those shapes' tables read (the mixes, commands and targets) where res
// has none; it returns the names of the shapes kept.
func mergeResults(res, old *Results) []string {
	measured := map[string]bool{}
	for _, sr := range res.Shapes {
		measured[sr.Shape.Name] = true
	}
	for _, mr := range res.Mesos {
		measured[mr.Shape.Name] = true
	}
	var kept []string
	var shapes []*ShapeResult
	for _, sr := range old.Shapes {
		if !measured[sr.Shape.Name] {
			if sr.From == "" {
				sr.From = runName(old)
			}
			shapes = append(shapes, sr)
			if !slices.Contains(kept, sr.Shape.Name) {
				kept = append(kept, sr.Shape.Name)
			}
		}
	}
	res.Shapes = append(shapes, res.Shapes...)
	slices.SortStableFunc(res.Shapes, func(a, b *ShapeResult) int { return strings.Compare(a.Shape.Name, b.Shape.Name) })
	var mesos []*mesosbench.Result
	for _, mr := range old.Mesos {
		if !measured[mr.Shape.Name] {
			if mr.From == "" {
				mr.From = runName(old)
			}
			mesos, kept = append(mesos, mr), append(kept, mr.Shape.Name)
		}
	}
	res.Mesos = append(mesos, res.Mesos...)
	slices.SortStableFunc(res.Mesos, func(a, b *mesosbench.Result) int { return strings.Compare(a.Shape.Name, b.Shape.Name) })
	if res.Mix == "" {
		res.Mix, res.MCMix = old.Mix, old.MCMix
	}
	if res.GoBenchCommand == "" {
		res.GoBenchCommand = old.GoBenchCommand
	}
	res.Commands = mergeMissing(res.Commands, old.Commands)
	res.Targets = mergeMissing(res.Targets, old.Targets)
	return kept
}

// mergeMissing is m with the keys of old it lacks.
func mergeMissing(m, old map[string]string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if _, ok := m[k]; !ok {
			m[k] = old[k]
		}
	}
	return m
}
