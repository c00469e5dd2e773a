package test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// imageVersion is the version the image tests stamp the binary with and
// pass to hack/image.
const imageVersion = "v9.9.9-image+test"

// staticBuild is the static coredns binary and the image tarball built from
// it, once per test binary run: the static build takes a minute on two
// cores. Both are kept in memory and the build directory removed, so that a
// run leaves nothing behind; each test writes what it needs to its own
// temporary directory.
var staticBuild struct {
	once    sync.Once
	binary  []byte
	tarball []byte
	err     error
}

func imageBuild(t *testing.T) (binary, tb []byte) {
	t.Helper()
	staticBuild.once.Do(func() {
		staticBuild.binary, staticBuild.tarball, staticBuild.err = buildImage()
	})
	if staticBuild.err != nil {
		t.Fatalf("build the image: %v", staticBuild.err)
	}
	return staticBuild.binary, staticBuild.tarball
}

func buildImage() (binary, tb []byte, err error) {
	dir, err := os.MkdirTemp("", "schemadns-image")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "coredns")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.version="+imageVersion, "-o", bin, "../coredns")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("static build: %w\n%s", err, out)
	}
	out := filepath.Join(dir, "image.tar")
	if msg, err := runImageTool(bin, out); err != nil {
		return nil, nil, fmt.Errorf("hack/image: %w\n%s", err, msg)
	}
	if binary, err = os.ReadFile(bin); err != nil {
		return nil, nil, err
	}
	if tb, err = os.ReadFile(out); err != nil {
		return nil, nil, err
	}
	return binary, tb, nil
}

// runImageTool runs hack/image as `make image` does and returns its output.
func runImageTool(binary, out string) ([]byte, error) {
	cmd := exec.Command("go", "run", "../hack/image", "-binary", binary, "-version", imageVersion, "-revision", "0123456789abcdef", "-out", out)
	// A SOURCE_DATE_EPOCH from the caller would be as good, but the tests
	// assert the default.
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=")
	return cmd.CombinedOutput()
}

// imageFile writes the tarball to a temporary file and opens it as
// `docker load` does, from manifest.json.
func imageFile(t *testing.T) v1.Image {
	t.Helper()
	_, tb := imageBuild(t)
	path := filepath.Join(t.TempDir(), "image.tar")
	if err := os.WriteFile(path, tb, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatalf("open the tarball: %v", err)
	}
	return img
}

func TestImageConfig(t *testing.T) {
	img := imageFile(t)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" {
		t.Errorf("User %q", c.User)
	}
	if want := []string{"/coredns", "-conf", "/etc/coredns/Corefile"}; !reflect.DeepEqual(c.Entrypoint, want) {
		t.Errorf("Entrypoint %q, want %q", c.Entrypoint, want)
	}
	if len(c.Cmd) != 0 {
		t.Errorf("Cmd %q, want none", c.Cmd)
	}
	var ports []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	if want := []string{"53/tcp", "53/udp", "8080/tcp", "8181/tcp", "9153/tcp"}; !reflect.DeepEqual(ports, want) {
		t.Errorf("ExposedPorts %q, want %q", ports, want)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  imageVersion,
		"org.opencontainers.image.revision": "0123456789abcdef",
		"org.opencontainers.image.title":    "schemadns-coredns",
		"org.opencontainers.image.source":   "https://github.com/schemadns/schemadns",
	} {
		if got := c.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if cfg.OS != "linux" || cfg.Architecture == "" {
		t.Errorf("platform %s/%s", cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("Created %s, want the epoch (no SOURCE_DATE_EPOCH)", cfg.Created.Time)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Errorf("%d layers, want 1", len(layers))
	}
	_, tb := imageBuild(t)
	m := ociManifest(t, tb)
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s; want OCI media types", m.MediaType, m.Config.MediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("OCI manifest layers %+v, want one %s", m.Layers, types.OCILayer)
	}
	if cn, _ := img.ConfigName(); m.Config.Digest != cn {
		t.Errorf("OCI manifest config %s, manifest.json config %s", m.Config.Digest, cn)
	}
	// The default tag is the version made a valid tag ('+' is not).
	var saved tarball.Manifest
	if err := json.Unmarshal(tarMember(t, tb, "manifest.json"), &saved); err != nil || len(saved) != 1 {
		t.Fatalf("manifest.json: %v", err)
	}
	if want := []string{"schemadns/coredns:v9.9.9-image-test"}; !reflect.DeepEqual(saved[0].RepoTags, want) {
		t.Errorf("RepoTags %q, want %q", saved[0].RepoTags, want)
	}
}

// TestImageBinaryServes: the /coredns of the image starts from a Corefile
// and answers, and says the version the image is labelled with.
func TestImageBinaryServes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary runs on linux only")
	}
	img := imageFile(t)
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("layers: %v, %v", layers, err)
	}
	bin := extractLayerFile(t, layers[0], "coredns")

	out, err := exec.Command(bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("-version: %v\n%s", err, out)
	}
	if first := strings.SplitN(string(out), "\n", 2)[0]; first != "CoreDNS-1.15.0 (schemadns "+imageVersion+")" {
		t.Errorf("-version first line %q", first)
	}

	dnsPort, readyPort := freeLoopbackPort(t), freeLoopbackPort(t)
	corefile := fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    whoami\n    ready 127.0.0.1:%d\n}\n", dnsPort, readyPort)
	log := &coreDNSProcess{}
	runCorefile(t, bin, corefile, log)

	addr := fmt.Sprintf("127.0.0.1:%d", dnsPort)
	var r *dns.Msg
	var local net.Addr
	eventually(t, 20*time.Second, "the image's coredns answers", func() bool {
		m := new(dns.Msg)
		m.SetQuestion("example.org.", dns.TypeA)
		conn, err := (&dns.Client{Timeout: 500 * time.Millisecond}).Dial(addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		local = conn.LocalAddr()
		if err := conn.WriteMsg(m); err != nil {
			return false
		}
		r, err = conn.ReadMsg()
		return err == nil
	})
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
		t.Errorf("rcode %s, authoritative %v; want NOERROR, authoritative\nlog:\n%s", dns.RcodeToString[r.Rcode], r.Authoritative, log.log())
	}
	// whoami answers with the client's address and port.
	port := local.(*net.UDPAddr).Port
	want := []string{
		"example.org.\t0\tIN\tA\t127.0.0.1",
		fmt.Sprintf("_udp.example.org.\t0\tIN\tSRV\t0 0 %d .", port),
	}
	if got := strings.Split(strings.TrimSpace(rrStrings(r.Extra)), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("additional section:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(r.Answer) != 0 {
		t.Errorf("answer section not empty:\n%s", rrStrings(r.Answer))
	}
}

// TestImageRejectsDynamicBinary: a binary that needs a loader would not
// start on the empty base, so no image is written for it.
func TestImageRejectsDynamicBinary(t *testing.T) {
	if _, err := os.Stat("/bin/true"); err != nil || runtime.GOOS != "linux" {
		t.Skip("no dynamically linked linux /bin/true to try")
	}
	out := filepath.Join(t.TempDir(), "image.tar")
	msg, err := runImageTool("/bin/true", out)
	if err == nil {
		t.Fatalf("built an image from /bin/true:\n%s", msg)
	}
	for _, want := range []string{"/bin/true: not a static linux executable: dynamically linked", "CGO_ENABLED=0"} {
		if !strings.Contains(string(msg), want) {
			t.Errorf("output %q does not say %q", msg, want)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s written anyway (%v)", out, err)
	}
}

// TestImageIsReproducible: a second build of the same binary gives the same
// image digest, so that a digest identifies a binary.
func TestImageIsReproducible(t *testing.T) {
	binary, first := imageBuild(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "coredns")
	if err := os.WriteFile(bin, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "image.tar")
	if msg, err := runImageTool(bin, out); err != nil {
		t.Fatalf("hack/image: %v\n%s", err, msg)
	}
	second, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := imageDigest(t, first), imageDigest(t, second)
	if d1 != d2 {
		t.Errorf("two builds of one binary: image digests %s and %s", d1, d2)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("two builds of one binary: tarballs differ")
	}
}

// ociManifest reads the OCI half of the tarball (index.json and the
// manifest it points at), which keeps the manifest as built: manifest.json
// does not record media types.
func ociManifest(t *testing.T, tb []byte) v1.Manifest {
	t.Helper()
	var index v1.IndexManifest
	if err := json.Unmarshal(tarMember(t, tb, "index.json"), &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json lists %d manifests, want 1", len(index.Manifests))
	}
	d := index.Manifests[0].Digest
	raw := tarMember(t, tb, "blobs/"+d.Algorithm+"/"+d.Hex)
	if h, _, _ := v1.SHA256(bytes.NewReader(raw)); h != d {
		t.Fatalf("manifest blob has digest %s, index.json says %s", h, d)
	}
	var m v1.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m
}

// imageDigest is the digest of the image's manifest: what a registry would
// list after a push.
func imageDigest(t *testing.T, tb []byte) v1.Hash {
	t.Helper()
	var index v1.IndexManifest
	if err := json.Unmarshal(tarMember(t, tb, "index.json"), &index); err != nil || len(index.Manifests) == 0 {
		t.Fatalf("index.json: %v", err)
	}
	return index.Manifests[0].Digest
}

// tarMember returns the contents of the regular file name in a tar archive.
func tarMember(t *testing.T, archive []byte, name string) []byte {
	t.Helper()
	_, r := findInTar(t, bytes.NewReader(archive), name, "the tarball")
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// layerFile finds name in the layer and returns its header and a reader
// of its contents, open until the test ends.
func layerFile(t *testing.T, l v1.Layer, name string) (*tar.Header, io.Reader) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return findInTar(t, rc, name, "the layer")
}

// findInTar reads the tar stream r up to name (in where, for the failure)
// and returns its header and a reader of its contents.
func findInTar(t *testing.T, r io.Reader, name, where string) (*tar.Header, io.Reader) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("no %s in %s", name, where)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == name {
			return h, tr
		}
	}
}

// extractLayerFile writes the regular file name of a layer to a temporary
// directory, checking that the image would let any user execute it.
func extractLayerFile(t *testing.T, l v1.Layer, name string) string {
	t.Helper()
	h, r := layerFile(t, l, name)
	if h.Typeflag != tar.TypeReg || h.Mode&0o111 != 0o111 {
		t.Fatalf("%s: type %c mode %o, want a regular file executable by all (the image runs as 65532)", name, h.Typeflag, h.Mode)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// freeLoopbackPort is a loopback port free for both UDP and TCP when asked,
// never handed out twice in this process, and below the kernel's ephemeral
// range (32768 up). A port from that range can become a client's own
// source port: a UDP query sent to it before the server binds it then
// comes back to the client as its own reply (no QR flag, NOERROR), which
// failed TestDeployLeastPrivilege now and then. Below the range no client
// socket and no port-0 bind of another server can take it.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		if portsGiven[port] {
			continue
		}
		pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		pc.Close()
		if err != nil {
			continue
		}
		l.Close()
		portsGiven[port] = true
		return port
	}
	t.Fatal("no loopback port free for both UDP and TCP")
	return 0
}

// portsGiven are the ports freeLoopbackPort handed out.
var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// TestImageBinaryBindsPort53AsNonRoot: the image's /coredns carries the
// file capability cap_net_bind_service=+ep (what the pod spec's
// NET_BIND_SERVICE needs to reach a non-root process), and with it the
// image's user, 65532, binds port 53 and answers. The binary is extracted
// with the layer's extended attribute, as a container runtime does.
func TestImageBinaryBindsPort53AsNonRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("file capabilities are linux only")
	}
	if os.Geteuid() != 0 {
		t.Fatal("setting a file capability and running as user 65532 needs root (the CI machine runs the tests as root)")
	}
	img := imageFile(t)
	layers, err := img.Layers()
	if err != nil || len(layers) == 0 {
		t.Fatalf("layers: %v, %v", layers, err)
	}
	h, _ := layerFile(t, layers[0], "coredns")
	// struct vfs_cap_data revision 2, effective; permitted = 1<<10 (CAP_NET_BIND_SERVICE).
	want := string([]byte{0x01, 0, 0, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	capability, ok := h.PAXRecords["SCHILY.xattr.security.capability"]
	if !ok || capability != want {
		t.Fatalf("/coredns security.capability %x (present %v), want %x", capability, ok, want)
	}

	// A directory the user 65532 can enter, holding the binary with its
	// capability and a Corefile that serves on port 53.
	dir, err := os.MkdirTemp("", "image-cap")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "coredns")
	if err := os.Rename(extractLayerFile(t, layers[0], "coredns"), bin); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(bin, "security.capability", []byte(capability), 0); err != nil {
		t.Fatalf("set security.capability on %s: %v", bin, err)
	}
	ip := freeLoopback53(t)
	cf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(cf, []byte(fmt.Sprintf(".:53 {\n    bind %s\n    whoami\n}\n", ip)), 0o644); err != nil {
		t.Fatal(err)
	}

	run := func(name string) (*coreDNSProcess, func()) {
		log := &coreDNSProcess{}
		cmd := exec.Command(name, "-conf", cf)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return log, func() { cmd.Process.Kill(); cmd.Wait() }
	}
	_, stop := run(bin)
	defer stop()
	eventually(t, 20*time.Second, "the image's coredns answers on port 53 as user 65532", func() bool {
		_, err := apExchange(net.JoinHostPort(ip, "53"), "example.org.", dns.TypeA)
		return err == nil
	})

	// The same binary without the capability cannot: the attribute is what
	// makes it work, not something else of this machine.
	stop()
	plain := filepath.Join(dir, "coredns-plain")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, data, 0o755); err != nil {
		t.Fatal(err)
	}
	log, stop := run(plain)
	defer stop()
	eventually(t, 20*time.Second, "without the capability, binding port 53 fails", func() bool {
		return strings.Contains(log.log(), "permission denied")
	})
}
