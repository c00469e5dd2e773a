package report

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/toolreport"
)

var update = flag.Bool("update", false, "write the golden pages of testdata/ again from the code")

// TestReportGolden renders the page of a whole run (testdata/benchmarks.json:
// the figures of a real run, given a note, an error and a wrong answer
// here) and compares it with testdata/benchmarks.md, so that a change to
// the page's code shows as a difference to review; -update writes it again.
func TestReportGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/benchmarks.json")
	if err != nil {
		t.Fatal(err)
	}
	var res results.Results
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	res.Note, res.Errors = "measured while another build ran", []string{"S4: the churn's checker lost its socket"}
	res.Shapes[0].Churn.Check[server.KeyOurs] = churn.Check{Answers: 4, Wrong: 1, Examples: []string{"headless-7: 10.128.0.9"}}
	if err := toolreport.CheckGolden("testdata/benchmarks.md", markdown(&res), *update); err != nil {
		t.Error(err)
	}
	if res.Machine.Dnsperf != "2.10.0" || res.Machine.CPUsAllowed != "0-1" || res.Machine.CPUs != 2 {
		t.Errorf("the machine of benchmarks.json, read back: %+v", res.Machine)
	}
}
