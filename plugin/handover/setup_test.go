package handover

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/coredns/caddy"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		ok      bool
		key     string
		selfSoc string
	}{
		{"handover {\n key /k\n}", true, "/k", ""},
		{"handover {\n key /k\n self_ready /run/r.sock 169.254.20.10:8181\n}", true, "/k", "/run/r.sock"},
		{"handover", false, "", ""},                                         // no key
		{"handover /k", false, "", ""},                                      // an argument
		{"handover {\n key\n}", false, "", ""},                              // key without file
		{"handover {\n key /k\n self_ready /r.sock\n}", false, "", ""},      // no address
		{"handover {\n key /k\n self_ready /r.sock 8181\n}", false, "", ""}, // not host:port
		{"handover {\n key /k\n bogus\n}", false, "", ""},
		{"handover {\n key /k\n}\nhandover {\n key /k\n}", false, "", ""},
	} {
		conf, err := parse(caddy.NewTestController("dns", tc.in))
		if (err == nil) != tc.ok {
			t.Errorf("%q: error %v, want ok %v", tc.in, err, tc.ok)
			continue
		}
		if !tc.ok {
			continue
		}
		got := ""
		if conf.selfReady != nil {
			got = conf.selfReady.path
		}
		if conf.keyFile != tc.key || got != tc.selfSoc {
			t.Errorf("%q: key %q self_ready %q, want %q %q", tc.in, conf.keyFile, got, tc.key, tc.selfSoc)
		}
	}
}

// TestSetupWithoutKeyFile: a key file that cannot be made is no setup
// error: the plugin runs, and never hands over.
func TestSetupWithoutKeyFile(t *testing.T) {
	c := caddy.NewTestController("dns", "handover {\n key "+filepath.Join(t.TempDir(), "missing", "key")+"\n}")
	if err := setup(c); err != nil {
		t.Fatal(err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	made, err := loadKey(path)
	if err != nil || len(made) != keySize {
		t.Fatalf("first load: %d bytes, %v", len(made), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("made key mode %v %v, want 0600", fi.Mode().Perm(), err)
	}
	again, err := loadKey(path)
	if err != nil || string(again) != string(made) {
		t.Fatalf("the successor's load gave another key (%v)", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the key's directory, want the key only", len(entries))
	}
	os.Chmod(path, 0o640)
	if _, err := loadKey(path); !errors.Is(err, errKeyPerm) {
		t.Errorf("a group-readable key: %v, want errKeyPerm", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc"), 0o600)
	if _, err := loadKey(short); !errors.Is(err, errKeyShort) {
		t.Errorf("a short key: %v, want errKeyShort", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(short, link)
	if _, err := loadKey(link); err == nil {
		t.Error("a key through a symbolic link was read")
	}
	if _, err := loadKey(filepath.Join(dir, "none", "key")); err == nil {
		t.Error("a key in a missing directory was made")
	}
}
