package cluster

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/schemadns/schemadns/test/e2e/images"
)

// LoadImages builds the test images and imports them with ours (the
// tarball of make image); it returns our image's name in the runtime.
func (n *Node) LoadImages(ctx context.Context, ours string) (string, error) {
	built, err := images.Build(ctx, path("images"))
	if err != nil {
		return "", fmt.Errorf("build test images: %w", err)
	}
	ref, err := imageRef(ours)
	if err != nil {
		return "", err
	}
	tars := []string{ours}
	for _, im := range built {
		tars = append(tars, im.Tar)
	}
	for _, t := range tars {
		if err := n.importImage(ctx, t); err != nil {
			return "", err
		}
	}
	return ref, nil
}

// imageRef reads the tag make image gave the tarball (manifest.json).
func imageRef(tarPath string) (string, error) {
	f, err := os.Open(tarPath)
	if err != nil {
		return "", fmt.Errorf("our image (make image): %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%s has no manifest.json", tarPath)
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", tarPath, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", fmt.Errorf("%s: manifest.json: %w", tarPath, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 {
			return "", fmt.Errorf("%s: want one image with one tag, have %+v", tarPath, m)
		}
		return m[0].RepoTags[0], nil
	}
}
