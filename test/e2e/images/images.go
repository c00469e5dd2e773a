// Package images builds the container images of the e2e cluster's pods
// other than ours: the pause (sandbox) image, a glibc client, a static musl
// client and busybox. No registry can be reached here, so each is made from
// this machine's own Debian files and one program compiled from
// csrc/resolve.c (the clients' resolver, and the pause image's process),
// and written by internal/ociimage as a docker-archive tarball that
// `ctr images import` loads under its name.
package images

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/schemadns/schemadns/internal/ociimage"
)

// Image refs (containerd names) of the test images.
const (
	Pause       = "schemadns.test/pause:e2e"        // sandbox (pause) image
	GlibcClient = "schemadns.test/glibc-client:e2e" // Debian glibc: getent, dig, resolve
	MuslClient  = "schemadns.test/musl-client:e2e"  // static musl: resolve
	// Busybox is Debian's busybox-static under the name
	// deploy/components/node-local's init container asks for (busybox:1.37).
	Busybox = "docker.io/library/busybox:1.37"
)

// Image is one built image.
type Image struct {
	Ref string // one of the constants above
	Tar string // a docker-archive tarball that ctr images import loads under Ref
}

//go:embed csrc/resolve.c
var resolveSource []byte

// file is one regular file, directory or symlink of a layer.
type file = ociimage.File

// needs maps each command Build runs or copies to its Debian package.
var needs = map[string]string{
	"gcc": "gcc", "musl-gcc": "musl-tools", "ldd": "libc-bin", "getent": "libc-bin",
	"dig": "bind9-dnsutils",
}

// Build compiles the programs and writes one tarball per image into dir.
func Build(ctx context.Context, dir string) ([]Image, error) {
	for cmd, pkg := range needs {
		if _, err := exec.LookPath(cmd); err != nil {
			return nil, fmt.Errorf("%s not found: apt-get install %s (hack/deps.sh)", cmd, pkg)
		}
	}
	if _, err := os.Stat(busyboxPath); err != nil {
		return nil, fmt.Errorf("%s not found: apt-get install busybox-static (hack/deps.sh)", busyboxPath)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return nil, err
	}
	bins := map[string]string{}
	for _, c := range []struct {
		out, cc, source string
		body            []byte
		flags           []string
	}{
		{"resolve-musl", "musl-gcc", "resolve.c", resolveSource, []string{"-static", "-O2", "-pthread"}},
		{"resolve-glibc", "gcc", "resolve.c", resolveSource, []string{"-O2", "-pthread"}},
	} {
		in := filepath.Join(src, c.source)
		if err := os.WriteFile(in, c.body, 0o644); err != nil {
			return nil, err
		}
		out := filepath.Join(src, c.out)
		args := append(append([]string{}, c.flags...), "-Wall", "-Wextra", "-o", out, in)
		if b, err := exec.CommandContext(ctx, c.cc, args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s %s: %w: %s", c.cc, c.source, err, b)
		}
		bins[c.out] = out
	}
	specs := []struct {
		ref        string
		entrypoint []string
		files      func() ([]file, error)
	}{
		// The sandbox only waits for SIGTERM: resolve's idle, static.
		{Pause, []string{"/pause", "idle"}, func() ([]file, error) { return binary(bins["resolve-musl"], "/pause") }},
		{MuslClient, []string{"/usr/local/bin/resolve", "idle"}, func() ([]file, error) {
			return withBase(binary(bins["resolve-musl"], "/usr/local/bin/resolve"))
		}},
		{GlibcClient, []string{"/usr/local/bin/resolve", "idle"}, func() ([]file, error) { return glibcFiles(ctx, bins["resolve-glibc"]) }},
		{Busybox, []string{"/bin/sh"}, busyboxFiles},
	}
	var built []Image
	for _, s := range specs {
		files, err := s.files()
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.ref, err)
		}
		out := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(s.ref)+".tar")
		if err := write(out, s.ref, s.entrypoint, files); err != nil {
			return nil, fmt.Errorf("image %s: %w", s.ref, err)
		}
		built = append(built, Image{Ref: s.ref, Tar: out})
	}
	return built, nil
}

// binary reads a program into the image at path.
func binary(src, path string) ([]file, error) {
	b, err := os.ReadFile(src)
	if err != nil {
		return nil, err
	}
	return []file{{Path: path, Mode: 0o755, Data: b}}, nil
}

// withBase adds the files every client image has: the users (root, the
// nonroot 65532 of distroless images, nobody) and /tmp.
func withBase(files []file, err error) ([]file, error) {
	if err != nil {
		return nil, err
	}
	return append(files,
		file{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")},
		file{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\nnogroup:x:65534:\n")},
		file{Path: "/tmp/", Mode: 0o1777},
	), nil
}

// glibcFiles is the glibc client: resolve, getent and dig with every shared
// library they load, and the nsswitch.conf that sends host names to DNS.
func glibcFiles(ctx context.Context, resolve string) ([]file, error) {
	files, err := binary(resolve, "/usr/local/bin/resolve")
	if err != nil {
		return nil, err
	}
	libs := map[string]bool{}
	for _, prog := range []string{resolve, mustLook("getent"), mustLook("dig")} {
		if prog != resolve {
			f, err := binary(prog, "/usr/bin/"+filepath.Base(prog))
			if err != nil {
				return nil, err
			}
			files = append(files, f...)
		}
		deps, err := sharedLibs(ctx, prog)
		if err != nil {
			return nil, err
		}
		for _, d := range deps {
			libs[d] = true
		}
	}
	for lib := range libs {
		// The file the loader opens, at the path ldd names (links resolved).
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, err
		}
		b, err := os.ReadFile(real)
		if err != nil {
			return nil, err
		}
		files = append(files, file{Path: lib, Mode: 0o755, Data: b})
	}
	files = append(files, file{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("passwd: files\ngroup: files\nhosts: files dns\n")})
	return withBase(files, nil)
}

func mustLook(cmd string) string {
	p, _ := exec.LookPath(cmd)
	return p
}

// sharedLibs lists the absolute paths ldd prints for a program.
func sharedLibs(ctx context.Context, prog string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", prog).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", prog, err)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		for _, f := range strings.Fields(line) {
			if strings.HasPrefix(f, "/") {
				libs = append(libs, f)
			}
		}
	}
	return libs, nil
}

// busyboxPath is Debian's busybox-static.
const busyboxPath = "/bin/busybox"

// busyboxFiles is busybox with the applets the manifests run.
func busyboxFiles() ([]file, error) {
	files, err := binary(busyboxPath, "/bin/busybox")
	if err != nil {
		return nil, err
	}
	for _, applet := range []string{"sh", "ip", "sleep", "cat", "ls", "echo", "wget", "nslookup", "true", "touch", "rm", "test"} {
		files = append(files, file{Path: "/bin/" + applet, Link: "busybox"})
	}
	return withBase(files, nil)
}

// write makes the one-layer image, its files sorted by path (so that each
// directory comes before what it holds, with its own mode) and owned by
// root, and writes it as a docker archive. Every timestamp is the epoch, so
// the same files give the same image.
func write(out, ref string, entrypoint []string, files []file) error {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	img, err := ociimage.Build(ociimage.Spec{
		Files: files,
		Config: v1.Config{
			Entrypoint: entrypoint,
			Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		},
		Platform: v1.Platform{OS: "linux", Architecture: "amd64"},
		Created:  time.Unix(0, 0).UTC(),
	})
	if err != nil {
		return err
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return ociimage.WriteDockerArchive(out, tag, img)
}
