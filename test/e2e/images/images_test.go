package images

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestBuild builds every image, reads each back as ctr would, and runs the
// clients from their own root file systems (chroot): the glibc image must
// carry every library its programs load.
func TestBuild(t *testing.T) {
	dir := t.TempDir()
	built, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		Pause:       {"/pause", "idle"},
		GlibcClient: {"/usr/local/bin/resolve", "idle"},
		MuslClient:  {"/usr/local/bin/resolve", "idle"},
		Busybox:     {"/bin/sh"},
	}
	// Files each layer must hold (tar names), besides what the runs below
	// prove; the busybox applets are those deploy/ and the harness run.
	files := map[string][]string{
		Pause: {"pause"},
		GlibcClient: {"usr/local/bin/resolve", "usr/bin/getent", "usr/bin/dig",
			"lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6",
			"etc/nsswitch.conf", "etc/passwd", "etc/group", "tmp/"},
		MuslClient: {"usr/local/bin/resolve", "etc/passwd", "etc/group", "tmp/"},
		Busybox: {"bin/busybox", "bin/sh", "bin/ip", "bin/sleep", "bin/cat", "bin/ls",
			"bin/echo", "bin/wget", "bin/nslookup", "bin/true", "etc/passwd", "etc/group", "tmp/"},
	}
	roots := map[string]string{}
	for _, im := range built {
		entry, ok := want[im.Ref]
		if !ok {
			t.Fatalf("unexpected image %s", im.Ref)
		}
		delete(want, im.Ref)
		root := filepath.Join(dir, "root-"+filepath.Base(im.Tar))
		cfg, headers := unpack(t, im, root)
		if !slices.Equal(cfg, entry) {
			t.Errorf("%s: entrypoint %q, want %q", im.Ref, cfg, entry)
		}
		for _, f := range files[im.Ref] {
			if headers[f] == nil {
				t.Errorf("%s: no %s in the layer", im.Ref, f)
			}
		}
		if h := headers["tmp/"]; h != nil && (h.Typeflag != tar.TypeDir || h.Mode != 0o1777) {
			t.Errorf("%s: /tmp is type %c mode %o, want a directory, mode 1777", im.Ref, h.Typeflag, h.Mode)
		}
		if h := headers["etc/passwd"]; h != nil {
			b, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
			if err != nil || !strings.Contains(string(b), "nonroot:x:65532:65532:") || !strings.HasPrefix(string(b), "root:x:0:0:") {
				t.Errorf("%s: /etc/passwd: %q %v", im.Ref, b, err)
			}
		}
		roots[im.Ref] = root
	}
	if len(want) != 0 {
		t.Fatalf("images not built: %v", want)
	}
	for _, ref := range []string{GlibcClient, MuslClient} {
		hosts := filepath.Join(roots[ref], "etc", "hosts")
		if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := chroot(t, roots[ref], "/usr/local/bin/resolve", "lookup", "-4", "localhost")
		if out != "localhost 127.0.0.1\n" {
			t.Errorf("%s: resolve lookup: %q", ref, out)
		}
	}
	if out := chroot(t, roots[GlibcClient], "/usr/bin/getent", "ahostsv4", "localhost"); !strings.HasPrefix(out, "127.0.0.1 ") {
		t.Errorf("glibc getent: %q", out)
	}
	if out := chroot(t, roots[GlibcClient], "/usr/bin/dig", "-v"); !strings.Contains(out, "DiG") {
		t.Errorf("glibc dig -v: %q", out)
	}
	// The node-local init container runs sh and ip.
	if out := chroot(t, roots[Busybox], "/bin/sh", "-c", "echo ok; busybox --list"); !strings.HasPrefix(out, "ok\n") || !strings.Contains(out, "\nip\n") {
		t.Errorf("busybox sh, ip: %q", out)
	}
	t.Run("loop", func(t *testing.T) { testLoop(t, roots[MuslClient]) })
	t.Run("pause", func(t *testing.T) { testPause(t, filepath.Join(roots[Pause], "pause")) })
}

// unpack reads the tarball under its tag, as ctr import does, extracts its
// layers into root and returns the entrypoint and the layers' tar headers
// by name.
func unpack(t *testing.T, im Image, root string) ([]string, map[string]*tar.Header) {
	t.Helper()
	tag, err := name.NewTag(im.Ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(im.Tar, &tag)
	if err != nil {
		t.Fatalf("%s: %v", im.Ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Errorf("%s: %d layers, want 1", im.Ref, len(layers))
	}
	headers := map[string]*tar.Header{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		extract(t, rc, root, headers)
		rc.Close()
	}
	return cf.Config.Entrypoint, headers
}

func extract(t *testing.T, r io.Reader, root string, headers map[string]*tar.Header) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		headers[h.Name] = h
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: owner %d:%d, mtime %v; want root and the epoch", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		p := filepath.Join(root, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(h.Mode).Perm())
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, os.FileMode(h.Mode).Perm())
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// chroot runs a program inside an image's root file system.
func chroot(t *testing.T, root string, args ...string) string {
	t.Helper()
	out, err := exec.Command("chroot", append([]string{root}, args...)...).CombinedOutput()
	if err != nil {
		t.Errorf("chroot %s %v: %v: %s", filepath.Base(root), args, err, out)
	}
	return string(out)
}

// testLoop runs the musl client's loop for two seconds and checks its
// ticks and its total.
func testLoop(t *testing.T, root string) {
	cmd := exec.Command("chroot", root, "/usr/local/bin/resolve", "loop", "-rate", "50", "-threads", "2", "localhost")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resolve loop: %v: %s", err, out.String())
	}
	ticks := regexp.MustCompile(`(?m)^tick \d+ ok=([1-9]\d*) fail=0 maxms=\d+$`).FindAllString(out.String(), -1)
	total := regexp.MustCompile(`(?m)^total ok=[1-9]\d* fail=0 slow=0$`).MatchString(out.String())
	if len(ticks) == 0 || !total {
		t.Errorf("resolve loop printed:\n%s", out.String())
	}
}

// testPause checks the pause program waits, then exits 0 on SIGTERM.
func testPause(t *testing.T, bin string) {
	cmd := exec.Command(bin, "idle")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Fatalf("pause exited by itself: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("pause after SIGTERM: %v", err)
		}
	case <-time.After(time.Second):
		_ = cmd.Process.Kill()
		t.Error("pause did not exit within 1 s of SIGTERM")
	}
}
