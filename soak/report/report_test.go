package report

import (
	"encoding/json"
	"testing"

	"github.com/schemadns/schemadns/internal/toolreport"
)

// TestMachineJSON: the machine's facts go to reliability.json as an object
// and come back the same; the one line of earlier runs comes back as the
// facts it held.
func TestMachineJSON(t *testing.T) {
	type results struct{ Machine Machine }
	m := Machine{toolreport.Machine{CPUModel: "AMD EPYC", CPUs: 2, CPUMHz: "2445.406", MemTotal: "23.5 GiB",
		Kernel: "6.18", GoVersion: "go1.26.8", Binary: "CoreDNS-1.15.0", LoadStart: "0.70 0.94 1.51", LoadEnd: "1.8 1.5 2.1"}}
	raw, err := json.Marshal(&results{Machine: m})
	if err != nil {
		t.Fatal(err)
	}
	var back results
	if err := json.Unmarshal(raw, &back); err != nil || back.Machine != m {
		t.Errorf("round trip: %+v (%v), want %+v", back.Machine, err, m)
	}
	for line, want := range map[string]toolreport.Machine{
		"2 CPUs (AMD EPYC), go1.26.8, load average at start 1.76 1.50 1.04": {
			CPUs: 2, CPUModel: "AMD EPYC", GoVersion: "go1.26.8", LoadStart: "1.76 1.50 1.04"},
		"8 CPUs (Intel(R) Xeon(R) CPU @ 2.20GHz), go1.25.1": {
			CPUs: 8, CPUModel: "Intel(R) Xeon(R) CPU @ 2.20GHz", GoVersion: "go1.25.1"},
	} {
		raw, _ := json.Marshal(map[string]string{"Machine": line})
		var got results
		if err := json.Unmarshal(raw, &got); err != nil || got.Machine.Machine != want {
			t.Errorf("%q: %+v (%v), want %+v", line, got.Machine, err, want)
		}
	}
	if err := json.Unmarshal([]byte(`{"Machine": "a machine"}`), &back); err == nil {
		t.Error("a line of no known form read without an error")
	}
}
