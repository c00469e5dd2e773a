// Package ociimage builds container images without a container engine or
// a registry: one layer made from a list of files (modes, owners, extended
// attributes such as file capabilities), a config (user, entrypoint, env,
// ports, labels), fixed timestamps so that the same inputs give the same
// bytes, and the image written as a tarball that docker load, podman load
// or ctr images import reads.
//
// `make image` (hack/image) writes the CoreDNS image with it, in the
// layout of Docker 25's docker save (WriteDockerSave); the e2e cluster's
// test images (test/e2e/images) are written as older docker-archive
// tarballs (WriteDockerArchive).
package ociimage

import (
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec is an image of one layer on an empty base.
type Spec struct {
	// Files are the layer's entries, written in this order (see File).
	Files []File
	// Config is what the image runs and how: user, entrypoint, env,
	// exposed ports, working directory, labels.
	Config   v1.Config
	Platform v1.Platform
	// Created is every timestamp: the config's, the layer entries' and, in
	// WriteDockerSave, the archive entries'.
	Created time.Time
	// History is the layer's history entry; the zero value leaves it
	// empty.
	History v1.History
	// OCI gives the manifest, config and layer the OCI media types; else
	// they are Docker's (schema 2).
	OCI bool
}

// Build makes the image of s. Its layer is held in memory, compressed once.
func Build(s Spec) (v1.Image, error) {
	rootfs, err := layer(s.Files, s.Created)
	if err != nil {
		return nil, err
	}
	// WithCompressedCaching: the digest's gzip pass is kept for the write,
	// not done again (the e2e glibc layer is 60 MB; under go test -race the
	// second pass alone took about 10 s). The bytes are the same.
	opts := []tarball.LayerOption{tarball.WithCompressedCaching}
	base := empty.Image
	add := mutate.Addendum{History: s.History}
	if s.OCI {
		opts = append([]tarball.LayerOption{tarball.WithMediaType(types.OCILayer)}, opts...)
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
		add.MediaType = types.OCILayer
	}
	if add.Layer, err = tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, opts...); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if base, err = mutate.ConfigFile(base, configFile(s)); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	img, err := mutate.Append(base, add)
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return img, nil
}

// configFile is the config of s before its layer is appended (which adds
// the layer's diff ID and history entry).
func configFile(s Spec) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: s.Platform.Architecture,
		OS:           s.Platform.OS,
		Variant:      s.Platform.Variant,
		Created:      v1.Time{Time: s.Created},
		// Some clients check it, as go-containerregistry's empty image says.
		RootFS: v1.RootFS{Type: "layers"},
		Config: s.Config,
	}
}
