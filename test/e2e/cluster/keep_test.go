package cluster

import (
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestParseKept: keptPIDs's lines, a restarted daemon's twice, a torn last
// line skipped.
func TestParseKept(t *testing.T) {
	got := parseKept("10 etcd\n11 kube-apiserver\n12 kubelet\n20 kube-apiserver\n31 pause\n4")
	want := []keptProcess{{10, "etcd"}, {11, "kube-apiserver"}, {12, "kubelet"}, {20, "kube-apiserver"}, {31, "pause"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseKept = %v, want %v", got, want)
	}
	if got := parseKept(""); got != nil {
		t.Errorf("parseKept(\"\") = %v, want none", got)
	}
}

// TestDescribeKept names the daemons and counts the rest.
func TestDescribeKept(t *testing.T) {
	got := describeKept([]keptProcess{{10, "etcd"}, {12, "kubelet"}, {31, "pause"}, {32, "containerd-shim"}})
	if want := "etcd 10, kubelet 12 and 2 processes of shims and pods"; got != want {
		t.Errorf("describeKept = %q, want %q", got, want)
	}
}

// TestShellQuote: what the launcher script names comes through sh as is.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"/var/lib/x", "a b", "it's", `$HOME "x" \n`} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != s {
			t.Errorf("sh gave %q for %q", out, s)
		}
	}
}

// TestKeepUsageOnPage: the committed page says what a run would write
// about -keep, so that the usage is there before the next run.
func TestKeepUsageOnPage(t *testing.T) {
	page, err := os.ReadFile("../../../docs/e2e.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), KeepUsage) {
		t.Errorf("docs/e2e.md lacks the -keep usage of KeepUsage (cluster/keep.go):\n%s", KeepUsage)
	}
}
