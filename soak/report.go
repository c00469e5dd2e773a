package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// results are everything the report is written from (and
// docs/reliability.json).
type results struct {
	Started, Finished time.Time
	Command           string
	Note              string
	Machine           string
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
	return res.Churn != nil || res.Quiet != nil || res.Relist != nil || res.Faults != nil || res.Hostile != nil || res.Slow != nil ||
		len(res.Errors) > 0
}

func newResults(cfg *config, args []string) *results {
	return &results{
		Started: time.Now(), Command: command(cfg, args), Note: cfg.Note, Machine: machine(),
		Fixture: fmt.Sprintf("%d headless services × %d endpoints and %d ClusterIP services (one EndpointSlice each, %d per namespace), %d ServiceImports",
			cfg.headless, cfg.endpoints, cfg.clusterIP, servicesPerNS, cfg.imports),
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

// machine describes the host: CPUs, model, load.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	load := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		load = ", load average at start " + strings.Join(strings.Fields(string(b))[:3], " ")
	}
	return fmt.Sprintf("%d CPUs (%s), %s%s", runtime.NumCPU(), model, runtime.Version(), load)
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
	var b strings.Builder
	r := &report{b: &b, res: res}
	r.write()
	if err := os.WriteFile(filepath.Join(cfg.OutDir, "reliability.md"), []byte(b.String()), 0o644); err != nil {
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

// report renders the results as Markdown.
type report struct {
	b   *strings.Builder
	res *results
}

func (r *report) p(format string, args ...any) { fmt.Fprintf(r.b, format+"\n", args...) }

// run writes the list items that say when and where a run was made.
func (r *report) run(started, finished time.Time, durations []string, machine, note string) {
	r.p("- Run: %s to %s UTC; %s", started.UTC().Format("2006-01-02 15:04"), finished.UTC().Format("15:04"), strings.Join(durations, ", "))
	r.p("- Machine: %s", machine)
	if note != "" {
		r.p("- Note: %s", note)
	}
}

func passFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**FAIL**"
}

func (r *report) write() {
	r.p("# Reliability")
	r.p("")
	if r.res.hasKubernetes() {
		if r.res.Mesos != nil {
			r.p("The Kubernetes plugins first, then [Mesos](#mesos-mesosschema) (mesosschema).")
			r.p("")
		}
		r.kubernetes()
	}
	r.mesos()
}

// kubernetes writes the Kubernetes part of the page.
func (r *report) kubernetes() {
	res := r.res
	r.p("Generated by `soak/`: reproduce with `%s` (a full run takes about %s on this machine).", res.Command, res.Finished.Sub(res.Started).Round(time.Minute))
	r.p("It starts a real etcd and kube-apiserver on loopback, loads the fixture with client-go, and runs two `bin/coredns`:")
	r.p("**ours** (kubeschema and multicluster in one server block, edns0autopath in front of kubeschema in a second, one shared watch cache)")
	r.p("and **stock** (CoreDNS's own `kubernetes` plugin with `multicluster clusterset.local`, compiled into the same binary).")
	r.p("Both reach the API server through a TCP proxy of the tool's own, which the fault scenarios use. See [soak/README.md](../soak/README.md) for the method.")
	r.p("")
	r.run(res.Started, res.Finished, res.Durations, res.Machine, res.Note)
	r.p("- Fixture: %s; loaded in %.0f s. RSS once synced: ours %s, stock %s.", res.Fixture, res.LoadSeconds, mib(res.SyncedRSS[keyOurs]), mib(res.SyncedRSS[keyStock]))
	r.p("")
	r.summary()
	r.churn()
	r.quiet()
	r.relist()
	r.faults()
	r.hostile()
	r.slow()
	if len(res.Errors) > 0 {
		r.p("## Errors of this run")
		r.p("")
		for _, e := range res.Errors {
			r.p("- %s", e)
		}
	}
}
