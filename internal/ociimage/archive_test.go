package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var testCreated = time.Unix(1700000000, 0).UTC()

// testSpec is a small image: one program, run as nonroot.
func testSpec(oci bool) Spec {
	return Spec{
		Files: []File{{Path: "/app/run", Mode: 0o755, Data: []byte("#!/bin/true\n")}},
		Config: v1.Config{
			User:         "65532:65532",
			Entrypoint:   []string{"/app/run", "-x"},
			Env:          []string{"PATH=/app"},
			ExposedPorts: map[string]struct{}{"53/udp": {}},
			Labels:       map[string]string{"org.opencontainers.image.title": "t"},
		},
		Platform: v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"},
		Created:  testCreated,
		History:  v1.History{CreatedBy: "test", Created: v1.Time{Time: testCreated}},
		OCI:      oci,
	}
}

// TestBuild: the config carries what the spec says, the layer's diff ID
// and history entry; the media types are OCI's or Docker's as asked.
func TestBuild(t *testing.T) {
	for _, c := range []struct {
		oci                     bool
		manifest, config, layer types.MediaType
	}{
		{true, types.OCIManifestSchema1, types.OCIConfigJSON, types.OCILayer},
		{false, types.DockerManifestSchema2, types.DockerConfigJSON, types.DockerLayer},
	} {
		s := testSpec(c.oci)
		img, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if m.MediaType != c.manifest || m.Config.MediaType != c.config || len(m.Layers) != 1 || m.Layers[0].MediaType != c.layer {
			t.Errorf("OCI %v: media types %s, %s, %v", c.oci, m.MediaType, m.Config.MediaType, m.Layers)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		diffID, err := mustLayer(t, img).DiffID()
		if err != nil {
			t.Fatal(err)
		}
		if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Variant != "v8" || !cf.Created.Equal(testCreated) ||
			cf.RootFS.Type != "layers" || !slices.Equal(cf.RootFS.DiffIDs, []v1.Hash{diffID}) ||
			len(cf.History) != 1 || cf.History[0].CreatedBy != "test" {
			t.Errorf("OCI %v: config %+v", c.oci, cf)
		}
		if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, s.Config.Entrypoint) || !slices.Equal(cf.Config.Env, s.Config.Env) ||
			len(cf.Config.ExposedPorts) != 1 || cf.Config.Labels["org.opencontainers.image.title"] != "t" {
			t.Errorf("OCI %v: runtime config %+v", c.oci, cf.Config)
		}
	}
}

func mustLayer(t *testing.T, img v1.Image) v1.Layer {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	return layers[0]
}

// TestWriteDockerSave: the archive reads back with go-containerregistry's
// docker-save reader and as an OCI layout whose manifest keeps its media
// type and digest; it is readable by all, the same image gives the same
// bytes, and no temporary file is left, after a success or a failure.
func TestWriteDockerSave(t *testing.T) {
	dir := t.TempDir()
	img, err := Build(testSpec(true))
	if err != nil {
		t.Fatal(err)
	}
	// On Docker Hub, which containerd names in full.
	tag, err := name.NewTag("team/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.tar"), filepath.Join(dir, "b.tar")
	for _, p := range []string{a, b} {
		if err := WriteDockerSave(p, tag, img); err != nil {
			t.Fatal(err)
		}
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if len(ab) == 0 || !bytes.Equal(ab, bb) {
		t.Errorf("two writes differ (%d and %d bytes)", len(ab), len(bb))
	}
	if fi, err := os.Stat(a); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("archive mode %v, %v; want 0644", fi.Mode(), err)
	}
	if err := WriteDockerSave(filepath.Join(dir, "missing", "c.tar"), tag, img); err == nil {
		t.Error("write into a missing directory: no error")
	}
	if err := WriteDockerSave(filepath.Join(dir, "c.tar"), tag, noLayers{img}); !errors.Is(err, errNoLayers) {
		t.Errorf("write of an image without layers: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.tar")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed write left c.tar: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}

	read, err := tarball.ImageFromPath(a, &tag)
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := mustLayer(t, img).Digest()
	if d, _ := mustLayer(t, read).Digest(); d != wantDigest {
		t.Errorf("manifest.json layer %s, want %s", d, wantDigest)
	}
	files := tarFiles(t, ab)
	for name, h := range files {
		if !h.ModTime.Equal(testCreated) {
			t.Errorf("%s: mtime %v, want the config's %v", name, h.ModTime, testCreated)
		}
	}
	checkOCILayout(t, files, img)
}

// checkOCILayout reads the OCI half of the archive: oci-layout, index.json
// and the manifest it points at, which must be img's own.
func checkOCILayout(t *testing.T, files map[string]*tarEntry, img v1.Image) {
	t.Helper()
	if got := string(files["oci-layout"].data); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", got)
	}
	var index v1.IndexManifest
	if err := json.Unmarshal(files["index.json"].data, &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json %s: %v", files["index.json"].data, err)
	}
	d := index.Manifests[0]
	if d.Annotations["io.containerd.image.name"] != "docker.io/team/app:v1" || d.Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("index annotations %v", d.Annotations)
	}
	if d.Platform == nil || d.Platform.String() != "linux/arm64/v8" || d.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index descriptor %+v", d)
	}
	raw, _ := img.RawManifest()
	digest, _ := img.Digest()
	blob := files["blobs/"+d.Digest.Algorithm+"/"+d.Digest.Hex]
	if d.Digest != digest || blob == nil || !bytes.Equal(blob.data, raw) || d.Size != int64(len(raw)) {
		t.Errorf("index names manifest %s (%d bytes), the image's is %s (%d bytes)", d.Digest, d.Size, digest, len(raw))
	}
}

var errNoLayers = errors.New("no layers")

// noLayers is an image whose layers cannot be read: its archive fails
// half-written.
type noLayers struct{ v1.Image }

func (noLayers) Layers() ([]v1.Layer, error) { return nil, errNoLayers }

// TestWriteDockerArchive: ctr's reading, by tag, gives back the image.
func TestWriteDockerArchive(t *testing.T) {
	img, err := Build(testSpec(false))
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("schemadns.test/app:e2e")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "a.tar")
	if err := WriteDockerArchive(p, tag, img); err != nil {
		t.Fatal(err)
	}
	read, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, err := read.Digest(); err != nil || got != want {
		t.Errorf("read back digest %s, %v; want %s", got, err, want)
	}
}

func TestRepoTag(t *testing.T) {
	for in, want := range map[string]string{
		"schemadns/coredns:v1":     "schemadns/coredns:v1",
		"schemadns/coredns":        "schemadns/coredns:latest",
		"example.com:5000/a/b:c.1": "example.com:5000/a/b:c.1",
	} {
		tag, err := name.NewTag(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := RepoTag(tag); got != want {
			t.Errorf("RepoTag(%s) = %s, want %s", in, got, want)
		}
	}
}

// tarEntry is one entry of an archive: its header and content.
type tarEntry struct {
	*tar.Header
	data []byte
}

func tarFiles(t *testing.T, archive []byte) map[string]*tarEntry {
	t.Helper()
	files := map[string]*tarEntry{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = &tarEntry{Header: h, data: b}
	}
}
