package ociimage

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteDockerArchive writes img to path as an older `docker save` did:
// manifest.json naming tag, the config and the layers, each blob named by
// its digest. It is what `ctr images import` loads under tag.
func WriteDockerArchive(path string, tag name.Tag, img v1.Image) error {
	return tarball.WriteToFile(path, tag, img)
}

// WriteDockerSave writes img to path in the layout of `docker save` since
// Docker 25, through a temporary file so that a failed build leaves no
// half-written tarball behind. The platform and every time in the archive
// are those of img's config.
//
// The layout is an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) and, pointing at the same blobs, the manifest.json of
// the older docker-save format. The OCI half keeps the manifest itself, so
// its media type and digest survive; the manifest.json half is what older
// `docker load` and go-containerregistry's tarball.ImageFromPath read.
// (WriteDockerArchive writes only manifest.json, from which a reader has to
// rebuild a Docker-typed manifest: an OCI manifest and its digest would be
// lost.)
func WriteDockerSave(path string, tag name.Tag, img v1.Image) (err error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("write %s: config: %w", path, err)
	}
	p := cf.Platform()
	if p == nil {
		return fmt.Errorf("write %s: the image config names no platform", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	a := &archive{tw: tar.NewWriter(tmp), mtime: cf.Created.Time}
	if err := a.image(tag, *p, img); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// CreateTemp makes the file 0600; a tarball is for anyone to load.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// RepoTag is the name docker-save's manifest.json gives the image: as
// written, with an explicit tag (Docker cannot load an image without one).
func RepoTag(t name.Tag) string {
	s := t.String()
	if !strings.HasSuffix(s, ":"+t.TagStr()) {
		s += ":" + t.TagStr()
	}
	return s
}

// archive writes the entries of the tarball, all with one time.
type archive struct {
	tw    *tar.Writer
	mtime time.Time
}

// image writes the blobs, then index.json, manifest.json and oci-layout.
func (a *archive) image(tag name.Tag, p v1.Platform, img v1.Image) error {
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: a.mtime}); err != nil {
			return err
		}
	}
	cfgPath, err := a.config(img)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers: %w", err)
	}
	var layerPaths []string
	for _, l := range layers {
		lp, err := a.layer(l)
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, lp)
	}
	desc, err := a.manifest(img)
	if err != nil {
		return err
	}
	desc.Platform = &p
	// The names Docker 25 gives in `docker save`: containerd and podman
	// name the loaded image from the first.
	desc.Annotations = map[string]string{
		"io.containerd.image.name":          containerdName(tag),
		"org.opencontainers.image.ref.name": tag.TagStr(),
	}
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{desc}}
	if err := a.json("index.json", index); err != nil {
		return err
	}
	docker := tarball.Manifest{{Config: cfgPath, RepoTags: []string{RepoTag(tag)}, Layers: layerPaths}}
	if err := a.json("manifest.json", docker); err != nil {
		return err
	}
	return a.json("oci-layout", map[string]string{"imageLayoutVersion": "1.0.0"})
}

// config writes the config blob of img and returns its path.
func (a *archive) config(img v1.Image) (string, error) {
	cfg, err := img.RawConfigFile()
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	p := blobPath(cfgName)
	return p, a.file(p, cfg)
}

// manifest writes the manifest blob of img and returns its descriptor.
func (a *archive) manifest(img v1.Image) (v1.Descriptor, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	if err := a.file(blobPath(digest), manifest); err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return v1.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	return v1.Descriptor{MediaType: mt, Digest: digest, Size: int64(len(manifest))}, nil
}

// layer writes the compressed blob of l and returns its path.
func (a *archive) layer(l v1.Layer) (string, error) {
	digest, err := l.Digest()
	if err != nil {
		return "", fmt.Errorf("layer: %w", err)
	}
	size, err := l.Size()
	if err != nil {
		return "", fmt.Errorf("layer: %w", err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return "", fmt.Errorf("layer: %w", err)
	}
	defer rc.Close()
	p := blobPath(digest)
	if err := a.tw.WriteHeader(a.header(p, size)); err != nil {
		return "", err
	}
	if _, err := io.Copy(a.tw, rc); err != nil {
		return "", fmt.Errorf("layer %s: %w", digest, err)
	}
	return p, nil
}

func (a *archive) json(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return a.file(name, b)
}

func (a *archive) file(name string, b []byte) error {
	if err := a.tw.WriteHeader(a.header(name, int64(len(b)))); err != nil {
		return err
	}
	_, err := a.tw.Write(b)
	return err
}

func (a *archive) header(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: a.mtime}
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// containerdName is the fully qualified name, with Docker Hub spelt
// docker.io as Docker and containerd spell it.
func containerdName(t name.Tag) string {
	reg := t.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + t.RepositoryStr() + ":" + t.TagStr()
}
