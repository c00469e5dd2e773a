package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent fails when plugin.cfg changed without
// `make generate`.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	for file, generate := range map[string]func() ([]byte, error){
		"zdirectives.go": func() ([]byte, error) { return generateDirectives("../../plugin.cfg") },
		"zplugins.go":    func() ([]byte, error) { return generateFile("../../plugin.cfg", nil) },
		"zplugins_run.go": func() ([]byte, error) {
			return generateFile("../../plugin.cfg", []string{"../../Corefile.example", "../../Corefile.mesos"})
		},
	} {
		want, err := generate()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile("../plugins/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("coredns/plugins/%s is stale: run `make generate`", file)
		}
	}
}

// TestRunBinaryLinksWhatTheExamplesUse: `make run`'s plugin set is the
// example Corefiles' directives, none of the cloud plugins, and a
// Corefile with a directive plugin.cfg lacks is refused.
func TestRunBinaryLinksWhatTheExamplesUse(t *testing.T) {
	src, err := generateFile("../../plugin.cfg", []string{"../../Corefile.example", "../../Corefile.mesos"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"github.com/schemadns/schemadns/plugin/kubeschema"`, `"github.com/schemadns/schemadns/plugin/mesosschema"`, `"github.com/coredns/coredns/plugin/forward"`, "//go:build schemadns_run"} {
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("the run binary's file lacks %s", want)
		}
	}
	for _, unwanted := range []string{`plugin/route53"`, `plugin/azure"`, `plugin/clouddns"`, `plugin/trace"`} {
		if bytes.Contains(src, []byte(unwanted)) {
			t.Errorf("the run binary links %s", unwanted)
		}
	}
	// The chain order is one file for both binaries: the whole list,
	// the plugins the run binary does not link included.
	order, err := generateDirectives("../../plugin.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(order, []byte("//go:build")) || !bytes.Contains(order, []byte(`"route53",`)) || !bytes.Contains(order, []byte(`"kubeschema",`)) {
		t.Errorf("the chain order is not one untagged list of every directive:\n%s", order)
	}
	if bytes.Contains(src, []byte("Directives")) {
		t.Error("the run binary's file repeats the chain order")
	}
	bad := filepath.Join(t.TempDir(), "Corefile")
	if err := os.WriteFile(bad, []byte(".:53 {\n  nosuchplugin\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generateFile("../../plugin.cfg", []string{bad}); err == nil {
		t.Error("a Corefile with an unknown directive: no error")
	}
}

func TestParseRejectsBadLines(t *testing.T) {
	for _, in := range []string{"noseparator\n", "a:b\na:c\n", ":x\n"} {
		if _, err := parse(strings.NewReader(in)); err == nil {
			t.Errorf("parse(%q): want error", in)
		}
	}
}

func TestParseResolvesStockPlugins(t *testing.T) {
	ds, err := parse(strings.NewReader("# c\n\nprometheus:metrics\nx:example.com/x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].importPath != corePluginPrefix+"metrics" || ds[1].importPath != "example.com/x" {
		t.Fatalf("got %+v", ds)
	}
}

// TestSupersetOfStock: plugin.cfg holds every directive of stock CoreDNS's
// plugin.cfg, of the version go.mod requires, in stock's order, and ours
// at the places the README names; a stock plugin added by a version bump
// fails it until it is listed.
func TestSupersetOfStock(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns").Output()
	if err != nil {
		t.Fatalf("go list the coredns module: %v", err)
	}
	stock := readNames(t, filepath.Join(strings.TrimSpace(string(out)), "plugin.cfg"))
	ours := readNames(t, "../../plugin.cfg")
	var stockInOurs []string
	isStock := map[string]bool{}
	for _, name := range stock {
		isStock[name] = true
	}
	for _, name := range ours {
		if isStock[name] {
			stockInOurs = append(stockInOurs, name)
		}
	}
	if !slices.Equal(stockInOurs, stock) {
		t.Errorf("stock's directives in plugin.cfg, in its order:\n%v\nstock's plugin.cfg:\n%v", stockInOurs, stock)
	}
	// Ours, each right before the directive the README puts it at
	// (clusterfirst also right after shed, hold right after loop).
	for _, at := range []struct{ ours, before string }{
		{"shed", "clusterfirst"},
		{"loop", "hold"},
		{"clusterfirst", "prometheus"},
		{"edns0autopath", "autopath"},
		{"kubeschema", "multicluster"},
		{"multicluster", "mesosschema"},
		{"mesosschema", "kubernetes"},
		{"hold", "gensearchpath"},
		{"gensearchpath", "forward"},
	} {
		i := slices.Index(ours, at.ours)
		if i < 0 || i+1 >= len(ours) || ours[i+1] != at.before {
			t.Errorf("%s is not right before %s in plugin.cfg", at.ours, at.before)
		}
	}
}

// readNames is the directives of a plugin.cfg, in order.
func readNames(t *testing.T, path string) []string {
	t.Helper()
	ds, err := readList(path)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.name
	}
	return names
}
