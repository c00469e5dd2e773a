package main

import (
	"flag"
	"testing"
	"time"

	"github.com/schemadns/schemadns/internal/toolreport"
)

var updateGolden = flag.Bool("update", false, "write the golden page of testdata/ again from the code")

// TestReportGolden renders the page of a fixed run and compares it with
// testdata/absorption.md, so that a change to the page's code shows as a
// difference to review; -update writes it again.
func TestReportGolden(t *testing.T) {
	if err := toolreport.CheckGolden("testdata/absorption.md", markdown(reportFixture()), *updateGolden); err != nil {
		t.Error(err)
	}
	unpinned := reportFixture()
	unpinned.Pinned, unpinned.Note, unpinned.Errors, unpinned.Shapes = false, "", nil, unpinned.Shapes[:1]
	if err := toolreport.CheckGolden("testdata/absorption-unpinned.md", markdown(unpinned), *updateGolden); err != nil {
		t.Error(err)
	}
}

// reportFixture is a run of the tool, for the report's golden page: S2 with
// both servers over three rounds, S4 with kubeschema alone in short runs
// that got a wrong answer, a note and an error.
func reportFixture() *results {
	started := time.Date(2026, 11, 25, 15, 35, 0, 0, time.UTC)
	res := &results{Started: started, Finished: started.Add(173 * time.Second), Scale: "default",
		Command: "cd bench && GOWORK=off go run ./absorb -scale default", Note: "another build ran at the same time",
		Machine: reportMachine(), CheckRate: 200, Pinned: true, ServerCPU: 1, ClientCPU: 0,
		Errors: []string{"S4 round 2 kubeschema: 1 wrong A answers, 0 older than seen, 0 wrong SRV/PTR; first: headless-7"}}
	s2, s4 := shapesAt["default"][0], shapesAt["default"][1]
	res.Shapes = append(res.Shapes, shapeFixture(s2, []string{keyOurs, keyStock}, 47580, 2.3), shapeFixture(s4, []string{keyOurs}, 1125.7, 0.1))
	return res
}

// shapeFixture is a shape's three rounds of the targets given, at rates
// around rate (updates/s), each run lasting about secs.
func shapeFixture(s shape, keys []string, rate, secs float64) *shapeResult {
	sr := &shapeResult{Shape: s, Updates: s.Updates, Names: s.Headless * 9 / 10, ListBytes: 31 << 20, EventBytes: 410 << 20,
		EncodeSec: 7.25, ByTarget: map[string]*summary{}, WatchListed: true}
	for round := range 3 {
		for i, key := range keys {
			r := rate / float64(1+i) * (1 + 0.01*float64(round))
			rr := &roundResult{Target: key, Updates: s.Updates, Rate: r, Seconds: secs * (1 + float64(i)), FeedSec: secs / 2,
				CPUPer: 1e6 / r * 0.93, SyncSec: 3.5 + float64(i), Busy: 0.97, Others: 0.02, Tool: 0.4, ToolCore: 0.55,
				Check: checkCount{Answers: 1000 + round, Spot: 40, Errors: i}, FoundStale: i,
				Requests: map[string]int{"WATCH-LIST endpointslices": 1, "LIST services": 1, "GET /version": 2}}
			if key == keyOurs && secs < 1 && round == 1 {
				rr.Check.Wrong, rr.Check.Examples = 1, []string{"headless-7"}
			}
			sr.Rounds = append(sr.Rounds, rr)
		}
	}
	sr.tally()
	return sr
}

func reportMachine() toolreport.Machine {
	return toolreport.Machine{CPUModel: "AMD EPYC", CPUMHz: "2596.136", CPUs: 2, MemTotal: "23.5 GiB", Kernel: "6.18.44-fc-v595",
		GoVersion: "go1.26.8", Binary: "CoreDNS-1.15.0 (schemadns 1f76279)", LoadStart: "2.39 2.51 2.47", LoadEnd: "0.95 1.79 2.19"}
}
