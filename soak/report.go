package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/test/toolreport"
)

// results are everything the report is written from (and
// docs/reliability.json).
type results struct {
	Started, Finished time.Time
	Command           string
	Note              string
	Machine           machine
	Fixture           string
	LoadSeconds       float64
	SyncedRSS         map[string]int64
	Churn             *churnResult
	Quiet             *quietResult
	Relist            *relistResult
	Faults            []*faultResult
	Hostile           []*hostileResult
	Slow              map[string]*slowResult
	Durations         []string
	Errors            []string
	// Mesos are the Mesos scenarios' results, with their own run.
	Mesos *mesosResults `json:",omitempty"`
}

// hasKubernetes tells whether res holds results of Kubernetes scenarios.
func (res *results) hasKubernetes() bool {
	return res.Churn != nil || res.Quiet != nil || res.Relist != nil || res.Faults != nil || res.Hostile != nil ||
		res.Slow != nil || len(res.Errors) > 0
}

func newResults(cfg *config, args []string) *results {
	return &results{
		Started: time.Now(), Command: command(cfg, args), Note: cfg.Note, Machine: readMachine(cfg.CoreDNS),
		Fixture: fmt.Sprintf("%d headless services × %d endpoints and %d ClusterIP services (one EndpointSlice each, "+
			"%d per namespace), %d ServiceImports", cfg.headless, cfg.endpoints, cfg.clusterIP, servicesPerNS, cfg.imports),
		SyncedRSS: map[string]int64{},
	}
}

// command is how to reproduce the run: `make soak` when only the scale
// and flags that change no figure (the note, where the output goes) were
// given, else the tool's command line without those.
func command(cfg *config, args []string) string {
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
	if cfg.Scale != "default" {
		base += " SCALE=" + cfg.Scale
	}
	if len(kept) == 0 {
		return base
	}
	return base + " SOAKFLAGS='" + strings.Join(kept, " ") + "'"
}

// writeReport writes reliability.md and reliability.json into cfg.OutDir.
// A run of one family of scenarios alone (Kubernetes or Mesos) keeps the
// other family's results from the reliability.json already there.
func writeReport(cfg *config, res *results) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	res = keepOthers(cfg, res)
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, "reliability.json"), append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(cfg.OutDir, "reliability.md"), []byte(markdown(res)), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// keepOthers returns res with the results of the family of scenarios it
// did not run taken from the previous reliability.json in cfg.OutDir, if
// there is one that decodes.
func keepOthers(cfg *config, res *results) *results {
	kube, mesos := cfg.anySelected("kubernetes"), cfg.anySelected("mesos")
	if kube && mesos {
		return res
	}
	raw, err := os.ReadFile(filepath.Join(cfg.OutDir, "reliability.json"))
	if err != nil {
		return res
	}
	var prev results
	if err := json.Unmarshal(raw, &prev); err != nil {
		logf("previous reliability.json unreadable, not kept: %v", err)
		return res
	}
	if kube {
		out := *res
		out.Mesos = prev.Mesos
		return &out
	}
	prev.Mesos = res.Mesos
	if !prev.hasKubernetes() {
		return res
	}
	return &prev
}

// machine is the host's facts, as every tool's report prints them.
// reliability.json files of runs before toolreport hold them as one line,
// "2 CPUs (AMD EPYC), go1.26.8, load average at start 1.76 1.50 1.04",
// which is read back into the same facts: a run of one family of scenarios
// keeps the other family's results from that file.
type machine struct{ toolreport.Machine }

func readMachine(coredns string) machine { return machine{toolreport.ReadMachine(coredns)} }

// machineLine is the one line of earlier runs.
var machineLine = regexp.MustCompile(`^(\d+) CPUs \((.*)\), ([^,\s]+)(?:, load average at start (.+))?$`)

func (m *machine) UnmarshalJSON(b []byte) error {
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

// report renders the results as Markdown.
type report struct {
	toolreport.Doc
	res *results
}

func markdown(res *results) string {
	r := &report{res: res}
	r.write()
	return r.String()
}

// run writes the list items that say when and where a run was made.
func (r *report) run(started, finished time.Time, durations []string, note string) {
	r.Line("- Run: %s to %s UTC; %s", started.UTC().Format("2006-01-02 15:04"), finished.UTC().Format("15:04"),
		strings.Join(durations, ", "))
	if note != "" {
		r.Line("- Note: %s", note)
	}
}

// table is a table of text only, as the page's are.
func table(head ...string) *toolreport.Table {
	return toolreport.NewTable(head...).TextColumns(len(head))
}

func passFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**FAIL**"
}

func (r *report) write() {
	r.Heading(1, "Reliability")
	if r.res.hasKubernetes() {
		if r.res.Mesos != nil {
			r.Para("The Kubernetes plugins first, then [Mesos](#mesos-mesosschema) (mesosschema).")
		}
		r.kubernetes()
	}
	r.mesos()
}

// kubernetes writes the Kubernetes part of the page.
func (r *report) kubernetes() {
	res := r.res
	r.Line("Generated by `soak/`: reproduce with `%s` (a full run takes about %s on this machine).",
		res.Command, res.Finished.Sub(res.Started).Round(time.Minute))
	r.Line("It starts a real etcd and kube-apiserver on loopback, loads the fixture with client-go, and runs two `bin/coredns`:")
	r.Line("**ours** (kubeschema and multicluster in one server block, edns0autopath in front of kubeschema in a " +
		"second, one shared watch cache)")
	r.Line("and **stock** (CoreDNS's own `kubernetes` plugin with `multicluster clusterset.local`, compiled into the same binary).")
	r.Line("Both reach the API server through a TCP proxy of the tool's own, which the fault scenarios use. " +
		"See [soak/README.md](../soak/README.md) for the method.")
	r.End()
	r.run(res.Started, res.Finished, res.Durations, res.Note)
	r.Line("- Fixture: %s; loaded in %.0f s. RSS once synced: ours %s, stock %s.",
		res.Fixture, res.LoadSeconds, mib(res.SyncedRSS[keyOurs]), mib(res.SyncedRSS[keyStock]))
	r.End()
	r.Heading(2, "Machine")
	r.Table(res.Machine.Table())
	r.summary()
	r.churn()
	r.quiet()
	r.relist()
	r.faults()
	r.hostile()
	r.slow()
	if len(res.Errors) > 0 {
		r.Heading(2, "Errors of this run")
		r.List(res.Errors)
	}
}
