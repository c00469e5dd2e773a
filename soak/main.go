// Command soak runs the reliability scenarios against the
// plugins and writes docs/reliability.md: EndpointSlice and Service churn
// with every answer checked, a forced relist (etcd compacted while the API
// server is down), API server faults (stopped, connections reset, watches
// stalled), hostile DNS input, and slow TCP clients; then mesosschema's
// Mesos master faults (outage, bad states, a slow master, failovers with
// and without ZooKeeper, ZooKeeper down, a new leader without agents)
// under a checker of every answer.
//
// Like bench/, it builds nothing itself (`make soak` builds bin/coredns and
// the API server binaries) and starts a real etcd and kube-apiserver on
// loopback (internal/kubeapi). One bin/coredns runs kubeschema, multicluster
// and edns0autopath ("ours"); a second runs CoreDNS's own kubernetes plugin
// ("stock") on the same data for comparison. Both reach the API server
// through a TCP proxy of the soak's own, which the faults use. The Mesos
// scenarios need no API server: each runs stand-in masters
// (internal/mesosmaster), ZooKeeper for one (internal/zookeeper), and a bin/coredns
// with mesosschema of its own.
//
// This package is the command line and the page's frame; the scenarios
// live in packages of their own: kube (the Kubernetes scenarios and their
// part of the page) on tracked (the services written and checked),
// apiserver (etcd, kube-apiserver and the fault proxy); mesos (the Mesos
// scenarios and their part of the page); and, shared by both, server (a
// bin/coredns under test), observe (what a checker counts, the health
// sampler) and report (the page's common pieces).
//
//	cd soak && go run . -scale small
//
// Linux only: it reads /proc.
package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/soak/kube"
	"github.com/schemadns/schemadns/soak/mesos"
)

// config is the command line.
type config struct {
	toolflags.Common
	kube  kube.Config
	mesos mesos.Config
	// scenarios is -scenarios; selected are the scenarios it names, its
	// groups expanded.
	scenarios string
	selected  map[string]bool
}

// scenarioGroups are the names -scenarios takes for several scenarios.
func scenarioGroups() map[string][]string {
	return map[string][]string{"kubernetes": kube.Names(), "mesos": mesos.Names()}
}

// presets are the scales: flag values applied unless given on the command
// line. "default" is the scale and the flags' own defaults.
var presets = map[string]map[string]string{
	"default": {},
	"small": {
		"headless": "200", "clusterip": "100", "imports": "20", "churn-duration": "15s",
		"outage": "10s", "hostile": "5000", "slow-conns": "200",
		"mesos-tasks": "300", "mesos-fault": "5s",
	},
}

func parseFlags(args []string) (*config, error) {
	cfg := &config{}
	k, m := &cfg.kube, &cfg.mesos
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	cfg.Register(fs, "reliability.md", "Corefiles, logs, the API server's files", "default (the issue's scale) or small (a tenth, shorter phases)")
	fs.IntVar(&k.Headless, "headless", 2000, "headless services, each with one EndpointSlice")
	fs.IntVar(&k.ClusterIP, "clusterip", 1000, "ClusterIP services, each with one EndpointSlice")
	fs.IntVar(&k.Endpoints, "endpoints", 10, "endpoints per service")
	fs.IntVar(&k.Imports, "imports", 200, "ClusterSetIP ServiceImports (multicluster)")
	fs.IntVar(&k.Writers, "writers", 96, "concurrent writers of the churn (client-go, protobuf, 8 per HTTP/2 connection)")
	fs.IntVar(&k.ChurnRate, "churn-rate", 0, "cap on the churn's writes per second (0: as fast as the API server accepts)")
	fs.DurationVar(&k.ChurnDuration, "churn-duration", time.Minute, "length of the churn")
	fs.IntVar(&k.CheckRate, "check-rate", 500, "queries/s the checker sends to each server")
	fs.DurationVar(&k.Outage, "outage", time.Minute, "length of each API server fault")
	fs.IntVar(&k.Hostile, "hostile", 50000, "hostile messages sent to each server port")
	fs.IntVar(&k.SlowConns, "slow-conns", 1000, "idle or slow TCP connections held against each server")
	fs.StringVar(&cfg.scenarios, "scenarios", "kubernetes,mesos", "the scenarios to run, comma-separated (they run in the order listed here): "+
		strings.Join(kube.Names(), ",")+" (the group kubernetes), "+strings.Join(mesos.Names(), ",")+" (the group mesos)")
	fs.IntVar(&m.Tasks, "mesos-tasks", 3000, "Mesos: running tasks of the generated cluster")
	fs.DurationVar(&m.Fault, "mesos-fault", 10*time.Second, "Mesos: length of each master fault (the phases before and after last half as long, at least 3 s)")
	fs.DurationVar(&m.Refresh, "mesos-refresh", time.Second, "Mesos: mesosschema's refresh, and how often the tasks change")
	fs.DurationVar(&m.StateTimeout, "mesos-state-timeout", 2*time.Second, "Mesos: mesosschema's state_timeout")
	if err := cfg.Parse(fs, args, presets); err != nil {
		return nil, err
	}
	return cfg, cfg.finish()
}

// finish resolves paths, hands the shared flags to both families of
// scenarios and checks the values.
func (cfg *config) finish() error {
	if err := cfg.Finish(); err != nil {
		return err
	}
	cfg.kube.CoreDNS, cfg.kube.Loaders = cfg.CoreDNS, cfg.Loaders
	cfg.mesos.CoreDNS, cfg.mesos.CheckRate = cfg.CoreDNS, cfg.kube.CheckRate
	if err := cfg.kube.Validate(); err != nil {
		return err
	}
	if err := cfg.mesos.Validate(); err != nil {
		return err
	}
	return cfg.selectScenarios()
}

// selectScenarios reads -scenarios, expanding the groups; an unknown name
// is an error.
func (cfg *config) selectScenarios() error {
	groups := scenarioGroups()
	cfg.selected = map[string]bool{}
	for name := range strings.SplitSeq(cfg.scenarios, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "":
		case groups[name] != nil:
			for _, n := range groups[name] {
				cfg.selected[n] = true
			}
		case slices.Contains(groups["kubernetes"], name) || slices.Contains(groups["mesos"], name):
			cfg.selected[name] = true
		default:
			return fmt.Errorf("-scenarios: unknown scenario %q (the scenarios: %s; the groups: kubernetes, mesos)", name,
				strings.Join(append(slices.Clone(groups["kubernetes"]), groups["mesos"]...), ", "))
		}
	}
	if len(cfg.selected) == 0 {
		return errors.New("-scenarios names none")
	}
	return nil
}

// isSelected tells whether the scenario name runs.
func (cfg *config) isSelected(name string) bool { return cfg.selected[name] }

// anySelected tells whether any scenario of the group runs.
func (cfg *config) anySelected(group string) bool {
	return slices.ContainsFunc(scenarioGroups()[group], cfg.isSelected)
}

func main() { toolflags.Main("soak", parseFlags, run) }

// logf prints progress with the time since start.
var logf = toolflags.Logf
