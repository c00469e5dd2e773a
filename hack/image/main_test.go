package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/schemadns/schemadns/internal/ociimage"
)

func TestSanitizeTag(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                  "v1.2.3",
		"v0.1.0-3-gabc1234-dirty": "v0.1.0-3-gabc1234-dirty",
		"v1.2.3+build.5":          "v1.2.3-build.5",
		"feature/x":               "feature-x",
		".hidden":                 "v.hidden",
		"-rc":                     "v-rc",
		strings.Repeat("a", 200):  strings.Repeat("a", 128),
	} {
		got := sanitizeTag(in)
		if got != want {
			t.Errorf("sanitizeTag(%q) = %q, want %q", in, got, want)
		}
		if _, err := name.NewTag("schemadns/coredns:" + got); err != nil {
			t.Errorf("sanitizeTag(%q) = %q is not a valid tag: %v", in, got, err)
		}
	}
}

func TestSourceDateEpoch(t *testing.T) {
	if got, err := sourceDateEpoch(""); err != nil || !got.Equal(time.Unix(0, 0)) {
		t.Errorf("unset: %v, %v; want the epoch", got, err)
	}
	if got, err := sourceDateEpoch("1700000000"); err != nil || got.Unix() != 1700000000 {
		t.Errorf("1700000000: %v, %v", got, err)
	}
	for _, bad := range []string{"yesterday", "-5", "1.5"} {
		if _, err := sourceDateEpoch(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseFlags(t *testing.T) {
	opts, err := parseFlags([]string{"-binary", "b", "-version", "v1.0.0+x", "-out", "o.tar"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ociimage.RepoTag(opts.tag); got != "schemadns/coredns:v1.0.0-x" {
		t.Errorf("default tag %q", got)
	}
	if opts.platform.OS != "linux" || opts.platform.Architecture != runtime.GOARCH {
		t.Errorf("default platform %s", opts.platform.String())
	}
	for _, args := range [][]string{
		{"-binary", "b", "-out", "o.tar"},
		{"-binary", "b", "-version", "v1", "-out", "o.tar", "-platform", "windows/amd64"},
		{"-binary", "b", "-version", "v1", "-out", "o.tar", "-tag", "Not A Ref"},
		{"-binary", "b", "-version", "v1", "-out", "o.tar", "extra"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

var (
	helloOnce sync.Once
	helloDir  string
	helloPath string
	helloErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if helloDir != "" {
		os.RemoveAll(helloDir)
	}
	os.Exit(code)
}

// staticHello is a tiny static linux program, a stand-in for coredns that
// builds in seconds.
func staticHello(t *testing.T) string {
	t.Helper()
	helloOnce.Do(func() {
		dir, err := os.MkdirTemp("", "image-hello")
		if err != nil {
			helloErr = err
			return
		}
		helloDir = dir
		if helloErr = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); helloErr != nil {
			return
		}
		helloPath = filepath.Join(dir, "hello")
		// Built from its own directory: outside any module, a program of
		// the standard library alone needs no go.mod.
		cmd := exec.Command("go", "build", "-o", helloPath, "main.go")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			helloErr = errors.New(string(out))
		}
	})
	if helloErr != nil {
		t.Fatalf("build a static program: %v", helloErr)
	}
	return helloPath
}

func TestCheckStatic(t *testing.T) {
	linux := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	if err := checkStatic(staticHello(t), linux); err != nil {
		t.Errorf("static Go program refused: %v", err)
	}
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	if err := checkStatic(staticHello(t), v1.Platform{OS: "linux", Architecture: other}); !errors.Is(err, errNotStatic) || !strings.Contains(err.Error(), "GOARCH="+other) {
		t.Errorf("binary for another architecture: %v", err)
	}
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(notELF, linux); !errors.Is(err, errNotStatic) || !strings.Contains(err.Error(), "not an ELF file") {
		t.Errorf("shell script: %v", err)
	}
	truncated := filepath.Join(t.TempDir(), "truncated")
	if err := os.WriteFile(truncated, []byte("\x7fELF\x02\x01"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkStatic(truncated, linux); !errors.Is(err, errNotStatic) {
		t.Errorf("truncated ELF: %v", err)
	}
	if err := checkStatic(filepath.Join(t.TempDir(), "missing"), linux); err == nil || errors.Is(err, errNotStatic) {
		t.Errorf("missing file: %v, want an open error", err)
	}
	if _, err := os.Stat("/bin/true"); err != nil || runtime.GOOS != "linux" {
		t.Skip("no dynamically linked linux /bin/true to try")
	}
	err := checkStatic("/bin/true", linux)
	if !errors.Is(err, errNotStatic) || !strings.Contains(err.Error(), "dynamically linked") || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("/bin/true: %v", err)
	}
}

// TestRunWritesLoadableDeterministicArchive: the archive reads back with
// go-containerregistry's docker-save reader and as an OCI layout, and a
// second build of the same binary is byte for byte the same.
func TestRunWritesLoadableDeterministicArchive(t *testing.T) {
	dir := t.TempDir()
	opts, err := parseFlags([]string{"-binary", staticHello(t), "-version", "v1.2.3", "-revision", "abc", "-out", filepath.Join(dir, "a.tar")})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run(opts, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "schemadns/coredns:v1.2.3 sha256:") {
		t.Errorf("output %q does not name the tag and digest", out.String())
	}
	opts.out = filepath.Join(dir, "b.tar")
	if err := run(opts, io.Discard); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.tar"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("two builds differ (%d and %d bytes)", len(a), len(b))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	img, err := tarball.ImageFromPath(filepath.Join(dir, "a.tar"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Labels["org.opencontainers.image.revision"] != "abc" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("config %+v", cfg)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	entries := layerEntries(t, layers[0])
	if want := "etc/ 755 0:0\netc/coredns/ 755 0:0\ncoredns 755 0:0\n"; entries != want {
		t.Errorf("layer entries:\n%swant:\n%s", entries, want)
	}

	index, manifest := ociManifest(t, a)
	if index.Manifests[0].Annotations["io.containerd.image.name"] != "docker.io/schemadns/coredns:v1.2.3" {
		t.Errorf("index annotations %v", index.Manifests[0].Annotations)
	}
	if manifest.MediaType != types.OCIManifestSchema1 || manifest.Config.MediaType != types.OCIConfigJSON || manifest.Layers[0].MediaType != types.OCILayer {
		t.Errorf("media types %s, %s, %s", manifest.MediaType, manifest.Config.MediaType, manifest.Layers[0].MediaType)
	}
	if d, _ := layers[0].Digest(); manifest.Layers[0].Digest != d {
		t.Errorf("OCI manifest layer %s, manifest.json layer %s", manifest.Layers[0].Digest, d)
	}
}

// layerEntries lists name, mode and owner of each entry.
func layerEntries(t *testing.T, l v1.Layer) string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var b strings.Builder
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %o %d:%d\n", h.Name, h.Mode, h.Uid, h.Gid)
	}
}

// ociManifest reads the OCI half of the archive: index.json and the
// manifest it points at.
func ociManifest(t *testing.T, archive []byte) (v1.IndexManifest, v1.Manifest) {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", files["index.json"], err)
	}
	var m v1.Manifest
	d := index.Manifests[0].Digest
	raw := files["blobs/"+d.Algorithm+"/"+d.Hex]
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest %s: %v", raw, err)
	}
	if h, _, _ := v1.SHA256(bytes.NewReader(raw)); h != index.Manifests[0].Digest {
		t.Errorf("manifest blob digest %s, index says %s", h, index.Manifests[0].Digest)
	}
	return index, m
}
