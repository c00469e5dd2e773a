package main

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/schemadns/schemadns/internal/toolreport"
	"github.com/schemadns/schemadns/soak/kube"
	"github.com/schemadns/schemadns/soak/observe"
)

var update = flag.Bool("update", false, "write the golden page of testdata/ again from the code")

// TestReportGolden renders the page of a whole run (testdata/reliability.json:
// the results of a real run, from before the machine's facts were a table,
// given notes, errors and failures here) and compares it with
// testdata/reliability.md, so that a change to the page's code shows as a
// difference to review; -update writes it again.
func TestReportGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/reliability.json")
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	res.Note, res.Errors = "measured while another build ran", []string{"hostile: a probe failed", "slow: interrupted"}
	res.Hostile[1].FirstFailure = "probe of headless-0: timeout"
	res.Faults[0].Note = "the proxy's fault"
	res.Churn.Check[kube.KeyOurs] = observe.Count{Answers: 5, Torn: 1, Examples: []string{"headless-3: 10.1.0.9"}}
	res.Mesos.Note, res.Mesos.Errors = "Mesos alone", []string{"mesos-slow: the master never answered"}
	if err := toolreport.CheckGolden("testdata/reliability.md", markdown(&res), *update); err != nil {
		t.Error(err)
	}
}
