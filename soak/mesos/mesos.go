// Package mesos runs the soak's Mesos scenarios: each starts stand-in
// masters (internal/mesosmaster), ZooKeeper for some (internal/zookeeper) and a
// bin/coredns with mesosschema of its own, serves a generated cluster whose
// tasks change between polls, breaks the masters in a way the plugin
// promises to survive, and judges every answer against the states served
// (history). It renders its own part of docs/reliability.md.
package mesos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schemadns/schemadns/internal/toolflags"
	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/soak/report"
)

// Config is the command line's part for the Mesos scenarios.
type Config struct {
	CoreDNS string // the binary
	// Tasks are the cluster's running tasks; Fault the length of each
	// fault; Refresh and StateTimeout the plugin's refresh and
	// state_timeout.
	Tasks                        int
	Fault, Refresh, StateTimeout time.Duration
	CheckRate                    int // queries/s the checker sends
}

// Validate checks the values.
func (cfg *Config) Validate() error {
	switch {
	case cfg.Tasks < 100:
		return errors.New("-mesos-tasks must be at least 100")
	case cfg.Fault <= 0 || cfg.Refresh < time.Second || cfg.StateTimeout <= 0:
		return errors.New("-mesos-fault and -mesos-state-timeout must be positive, -mesos-refresh at least 1s")
	}
	return nil
}

// logf prints progress with the time since start.
var logf = toolflags.Logf

// The Mesos scenarios run bin/coredns with mesosschema against stand-in
// masters (internal/mesosmaster) on 127.0.0.2 and 127.0.0.3, serving a
// generated cluster whose tasks change between polls, and break the
// masters in the ways the plugin promises to survive. They need no API
// server: a run of these alone starts none.

// The masters' addresses: loopback IPs of their own, as masters have
// hosts of their own.
const (
	firstMasterIP  = "127.0.0.2"
	secondMasterIP = "127.0.0.3"
)

// scenario is one Mesos scenario: its name for -scenarios, its
// title in the report, the masters it starts, and what it does.
type scenario struct {
	name, title string
	masters     int
	zk          bool // leader detection through ZooKeeper, not the masters list
	// attempts is how many fetches of one poll can each take the whole
	// state_timeout: the staleness allowed is refresh + attempts ×
	// state_timeout + slack.
	attempts int
	run      func(context.Context, *env) error
	// criteria judge the scenario once its observers have stopped.
	criteria func(*env) []criterion
}

// Names are the scenarios' names, in the order they run.
func Names() []string {
	var out []string
	for _, sc := range scenarios {
		out = append(out, sc.name)
	}
	return out
}

// scenarios are the scenarios, in the order they run.
var scenarios = []scenario{
	{name: "mesos-outage", title: "Master outage", masters: 1, attempts: 1, run: runOutage, criteria: outageCriteria},
	{name: "mesos-badstate", title: "Bad states", masters: 1, attempts: 1, run: runBadState, criteria: outageCriteria},
	{name: "mesos-slow", title: "Slow master", masters: 2, attempts: 2, run: runSlow, criteria: slowCriteria},
	{name: "mesos-failover", title: "Failover to the second master", masters: 2, attempts: 1, run: runFailover, criteria: failoverCriteria},
	{name: "mesos-failover-zk", title: "Failover found through ZooKeeper", masters: 2, zk: true, attempts: 1, run: runFailover, criteria: failoverCriteria},
	{name: "mesos-zk-down", title: "ZooKeeper down", masters: 1, zk: true, attempts: 1, run: runZKDown, criteria: zkDownCriteria},
	{name: "mesos-handover", title: "Leader change followed through a redirect", masters: 2, attempts: 1, run: runHandover, criteria: failoverCriteria},
	{name: "mesos-noagents", title: "New leader without agents", masters: 2, attempts: 1, run: runNoAgents, criteria: noAgentsCriteria},
}

// slack is the time to decode a state and build its snapshot, and the
// scheduling delays of a loaded machine, in the staleness allowed.
const slack = time.Second

// Results are the Mesos scenarios' results, with the run they come
// from: a run of the Mesos scenarios alone keeps the Kubernetes results
// of the page as they were, and the reverse.
type Results struct {
	Started, Finished     time.Time
	Command, Note         string
	Machine               report.Machine
	Cluster               string
	Refresh, StateTimeout string
	Scenarios             []*Result
	Durations, Errors     []string
}

// NewResults starts the results of a run of cfg, reproduced with command.
func NewResults(cfg *Config, command, note string) *Results {
	o := shape(cfg.Tasks)
	return &Results{
		Started: time.Now(), Command: command, Note: note, Machine: report.ReadMachine(cfg.CoreDNS),
		Cluster: fmt.Sprintf("%d running tasks (%d more in other states) of 1 to %d instances an app in %d frameworks "+
			"on %d agents (mesosstatetest's BenchShape, scaled; IPv4 agents)",
			o.Tasks, int(float64(o.Tasks)*o.NotRunning+0.5), o.MaxInstances, o.Frameworks, o.Agents),
		Refresh: cfg.Refresh.String(), StateTimeout: cfg.StateTimeout.String(),
	}
}

// Run runs the Mesos scenarios selected names, each with masters and a
// server of its own, in work; a failed one does not stop the others.
func Run(ctx context.Context, cfg *Config, selected func(name string) bool, work string, res *Results) {
	for i, sc := range scenarios {
		if !selected(sc.name) {
			continue
		}
		start := time.Now()
		logf("scenario %s", sc.name)
		r, err := runScenario(ctx, cfg, work, sc, uint64(i+1))
		if r != nil {
			res.Scenarios = append(res.Scenarios, r)
		}
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", sc.name, err))
			logf("%s: %v", sc.name, err)
		}
		res.Durations = append(res.Durations, fmt.Sprintf("%s %s", sc.name, time.Since(start).Round(time.Second)))
		if ctx.Err() != nil {
			break
		}
	}
	res.Finished, res.Machine.LoadEnd = time.Now(), toolreport.LoadAverage()
}
