// Package report holds the pieces of docs/reliability.md that the
// Kubernetes and the Mesos parts of the page share: the document with the
// lines that say when and where a run was made, the page's tables and
// words for a verdict, the machine's facts (also as earlier runs wrote
// them) and the command that reproduces a run.
package report

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolreport"
)

// Doc is the page being written.
type Doc struct{ toolreport.Doc }

// Run writes the list items that say when and where a run was made.
func (d *Doc) Run(started, finished time.Time, durations []string, note string) {
	d.Line("- Run: %s to %s UTC; %s", started.UTC().Format("2006-01-02 15:04"), finished.UTC().Format("15:04"),
		strings.Join(durations, ", "))
	if note != "" {
		d.Line("- Note: %s", note)
	}
}

// Table is a table of text only, as the page's are.
func Table(head ...string) *toolreport.Table {
	return toolreport.NewTable(head...).TextColumns(len(head))
}

// PassFail is a criterion's verdict.
func PassFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**FAIL**"
}

// YesNo is whether every scenario passed.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

// Secs is seconds to an event, or never (s < 0).
func Secs(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}

// MiB is bytes in MiB, with the unit.
func MiB(b int64) string { return toolreport.MiB(b) + " MiB" }

// Command is how to reproduce the run: `make soak` when only the scale
// and flags that change no figure (the note, where the output goes) were
// given, else the tool's command line without those.
func Command(scale string, args []string) string {
	// Flags that change no figure; all but keep take a value.
	skip := map[string]bool{"note": true, "out": true, "keep": true, "root": true, "scale": true}
	var kept []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !skip[name] {
			kept = append(kept, a)
			continue
		}
		if !hasValue && name != "keep" {
			i++ // its value
		}
	}
	base := "make soak"
	if scale != "default" {
		base += " SCALE=" + scale
	}
	if len(kept) == 0 {
		return base
	}
	return base + " SOAKFLAGS='" + strings.Join(kept, " ") + "'"
}

// Machine is the host's facts, as every tool's report prints them.
// reliability.json files of runs before toolreport hold them as one line,
// "2 CPUs (AMD EPYC), go1.26.8, load average at start 1.76 1.50 1.04",
// which is read back into the same facts: a run of one family of scenarios
// keeps the other family's results from that file.
type Machine struct{ toolreport.Machine }

// ReadMachine reads the facts of this host and of the binary coredns.
func ReadMachine(coredns string) Machine { return Machine{toolreport.ReadMachine(coredns)} }

// machineLine is the one line of earlier runs.
var machineLine = regexp.MustCompile(`^(\d+) CPUs \((.*)\), ([^,\s]+)(?:, load average at start (.+))?$`)

// UnmarshalJSON reads the facts, or the one line of an earlier run.
func (m *Machine) UnmarshalJSON(b []byte) error {
	var line string
	if err := json.Unmarshal(b, &line); err != nil {
		return json.Unmarshal(b, &m.Machine)
	}
	if line == "" {
		return nil
	}
	f := machineLine.FindStringSubmatch(line)
	if f == nil {
		return fmt.Errorf("machine %q: neither the facts nor the line of an earlier run", line)
	}
	m.CPUs, _ = strconv.Atoi(f[1])
	m.CPUModel, m.GoVersion, m.LoadStart = f[2], f[3], f[4]
	return nil
}
