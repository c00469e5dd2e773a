package toolflags

import (
	"flag"
	"path/filepath"
	"testing"
)

// TestPresetAndDefaults: a preset sets what the command line did not
// give, never what it did; paths default under the absolute root.
func TestPresetAndDefaults(t *testing.T) {
	presets := map[string]map[string]string{"default": {}, "small": {"loaders": "4", "rounds": "3"}}
	var c Common
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	c.Register(fs, "report.md", "logs", "default or small")
	rounds := fs.Int("rounds", 5, "")
	if err := c.Parse(fs, []string{"-scale", "small", "-rounds", "7", "-root", "/tmp/x/.."}, presets); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(); err != nil {
		t.Fatal(err)
	}
	if c.Loaders != 4 || *rounds != 7 {
		t.Errorf("loaders %d (want the preset's 4), rounds %d (want the given 7)", c.Loaders, *rounds)
	}
	if c.Root != "/tmp" || c.CoreDNS != filepath.Join("/tmp", "bin", "coredns") || c.OutDir != "/tmp/docs" {
		t.Errorf("root %q, coredns %q, out %q", c.Root, c.CoreDNS, c.OutDir)
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	var d Common
	d.Register(fs, "r", "k", "s")
	if err := d.Parse(fs, []string{"-scale", "huge"}, presets); err == nil {
		t.Error("-scale huge accepted")
	}
	d.Loaders = 0
	if err := d.Finish(); err == nil {
		t.Error("-loaders 0 accepted")
	}
}

// TestShellJoin: plain arguments as they are, the others quoted so that a
// shell reads them back.
func TestShellJoin(t *testing.T) {
	got := ShellJoin([]string{"-scale", "small", "-note", "it's busy", "", "-out=/tmp/x,y"})
	want := `-scale small -note 'it'\''s busy' '' -out=/tmp/x,y`
	if got != want {
		t.Errorf("ShellJoin: %s, want %s", got, want)
	}
}
