// Command image builds the schemadns CoreDNS container image from a static
// linux binary, without a container engine, and writes it as one tarball
// that `docker load` and `podman load` both accept (`make image` runs it).
//
// The image is the binary on an empty base, with OCI media types and fixed
// timestamps: two builds of the same binary give the same image digest.
//
// The tarball has the layout of `docker save` since Docker 25: an OCI image
// layout (oci-layout, index.json, blobs/sha256/...) and, pointing at the same
// blobs, the manifest.json of the older docker-save format. The OCI half
// keeps the manifest itself, so its media type and digest survive; the
// manifest.json half is what older `docker load` and go-containerregistry's
// tarball.ImageFromPath read. (tarball.WriteToFile writes only manifest.json,
// from which a reader has to rebuild a Docker-typed manifest: the OCI
// manifest and its digest would be lost.)
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image runs and how; the Dockerfile at the top of the repository
// says the same for those who build with an engine.
const (
	binaryPath = "/coredns"
	confDir    = "/etc/coredns/"
	// user is the conventional "nonroot" uid and gid of distroless images.
	user   = "65532:65532"
	source = "https://github.com/schemadns/schemadns"
	title  = "schemadns-coredns"
	desc   = "CoreDNS with the schemadns Kubernetes DNS plugins (kubeschema, multicluster, gensearchpath, edns0autopath)"
	repo   = "schemadns/coredns"
)

var (
	entrypoint = []string{binaryPath, "-conf", confDir + "Corefile"}
	// Ports: DNS, prometheus metrics, health, ready.
	ports = []string{"53/udp", "53/tcp", "9153/tcp", "8080/tcp", "8181/tcp"}
)

// errNotStatic is wrapped by every refusal of the binary, so that nobody
// ships an image whose entrypoint cannot start on an empty base.
var errNotStatic = errors.New("not a static linux executable")

// options are the command-line flags, checked.
type options struct {
	binary, version, revision, out string
	tag                            name.Tag
	platform                       v1.Platform
	// created is every timestamp in the image.
	created time.Time
}

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(opts, os.Stdout)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	flags := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := flags.String("binary", "", "static linux `path` of the coredns binary (CGO_ENABLED=0 GOOS=linux go build ./coredns)")
	version := flags.String("version", "", "schemadns `version` the binary was stamped with (label, default tag)")
	revision := flags.String("revision", "", "git commit `sha` of the source (label; optional)")
	out := flags.String("out", "", "`file`.tar to write")
	tag := flags.String("tag", "", "image `reference` written into the tarball (default "+repo+":<version>)")
	platform := flags.String("platform", "linux/"+runtime.GOARCH, "`os/arch[/variant]` of the binary")
	if err := flags.Parse(args); err != nil {
		return options{}, err
	}
	if flags.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	if *binary == "" || *version == "" || *out == "" {
		return options{}, errors.New("-binary, -version and -out are required")
	}
	opts := options{binary: *binary, version: *version, revision: *revision, out: *out}
	ref := *tag
	if ref == "" {
		ref = repo + ":" + sanitizeTag(*version)
	}
	var err error
	if opts.tag, err = name.NewTag(ref); err != nil {
		return options{}, fmt.Errorf("-tag: %w", err)
	}
	p, err := v1.ParsePlatform(*platform)
	if err != nil {
		return options{}, fmt.Errorf("-platform: %w", err)
	}
	if p.OS != "linux" {
		return options{}, fmt.Errorf("-platform %s: only linux images are built", *platform)
	}
	opts.platform = *p
	if opts.created, err = sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return options{}, err
	}
	return opts, nil
}

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// sanitizeTag turns a version (from git describe, or semver with build
// metadata such as v1.2.3+abc) into a valid image tag: [A-Za-z0-9_.-], not
// starting with . or -, at most 128 characters.
func sanitizeTag(version string) string {
	t := notInTag.ReplaceAllString(version, "-")
	if t == "" || t[0] == '.' || t[0] == '-' {
		t = "v" + t
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

// sourceDateEpoch is the reproducible-builds timestamp: $SOURCE_DATE_EPOCH
// if set, else the Unix epoch, so that the build time never reaches the
// digest.
func sourceDateEpoch(env string) (time.Time, error) {
	if env == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(env, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the epoch", env)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func run(opts options, stdout io.Writer) error {
	if err := checkStatic(opts.binary, opts.platform); err != nil {
		return err
	}
	img, err := buildImage(opts)
	if err != nil {
		return err
	}
	if err := writeArchive(opts.out, opts.tag, opts.platform, opts.created, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s (%s)\n", opts.out, repoTag(opts.tag), digest, opts.platform.String())
	return nil
}

// elfMachine is the ELF machine of each architecture an image may be built
// for; a binary for another one would fail with "exec format error".
var elfMachine = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// checkStatic refuses a binary that cannot start as the entrypoint of an
// image with an empty base: not a linux ELF executable, built for another
// architecture, or needing a loader (PT_INTERP) or shared libraries
// (DT_NEEDED), none of which the image has.
func checkStatic(path string, p v1.Platform) error {
	f, err := elf.Open(path)
	if err != nil {
		// Anything but a failure to open the file is a failure to parse it.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("binary: %w", err)
		}
		return fmt.Errorf("%s: %w: not an ELF file (%v); build it with CGO_ENABLED=0 GOOS=linux", path, errNotStatic, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s: %w: ELF type %s, not an executable", path, errNotStatic, f.Type)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return fmt.Errorf("%s: %w: built for %s; build it with GOOS=linux", path, errNotStatic, f.OSABI)
	}
	if want, ok := elfMachine[p.Architecture]; ok && f.Machine != want {
		return fmt.Errorf("%s: %w: built for %s, the image is %s; build it with GOARCH=%s or change -platform", path, errNotStatic, f.Machine, p.Architecture, p.Architecture)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			interp, _ := io.ReadAll(prog.Open())
			return fmt.Errorf("%s: %w: dynamically linked (loader %s), and an image with an empty base has no loader or C library; build it with CGO_ENABLED=0",
				path, errNotStatic, strings.TrimRight(string(interp), "\x00"))
		}
	}
	// A static-pie binary has a dynamic section but needs no library; only
	// needed libraries stop it from starting.
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: read the dynamic section: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s: %w: needs shared libraries %s, which an image with an empty base does not have; build it with CGO_ENABLED=0",
			path, errNotStatic, strings.Join(libs, ", "))
	}
	return nil
}

// buildImage is the binary and an empty /etc/coredns on an empty base.
func buildImage(opts options) (v1.Image, error) {
	rootfs, err := rootFS(opts.binary, opts.created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(rootfs)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, configFile(opts))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: opts.created},
			CreatedBy: "hack/image: COPY " + filepath.Base(opts.binary) + " " + binaryPath,
			Comment:   "schemadns " + opts.version,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	return img, nil
}

func configFile(opts options) *v1.ConfigFile {
	exposed := map[string]struct{}{}
	for _, p := range ports {
		exposed[p] = struct{}{}
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       title,
		"org.opencontainers.image.version":     opts.version,
		"org.opencontainers.image.source":      source,
		"org.opencontainers.image.description": desc,
	}
	if opts.revision != "" {
		labels["org.opencontainers.image.revision"] = opts.revision
	}
	return &v1.ConfigFile{
		Architecture: opts.platform.Architecture,
		OS:           opts.platform.OS,
		Variant:      opts.platform.Variant,
		Created:      v1.Time{Time: opts.created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:         user,
			Entrypoint:   entrypoint,
			ExposedPorts: exposed,
			WorkingDir:   "/",
			Labels:       labels,
		},
	}
}

// netBindServiceCapability is the security.capability extended attribute
// (struct vfs_cap_data, revision 2) that `setcap cap_net_bind_service=+ep`
// writes: CAP_NET_BIND_SERVICE permitted and effective. The image runs as
// user 65532, and a capability the pod spec adds reaches a non-root
// process only through its file's capability set (runtimes set no ambient
// capabilities): without it /coredns could not bind port 53 unless the
// runtime lowers net.ipv4.ip_unprivileged_port_start, which a
// host-network pod (the node-local cache) never gets. It lands in the
// layer as a PAX record, as docker build stores it.
var netBindServiceCapability = func() string {
	const (
		vfsCapRevision2      = 0x02000000
		vfsCapFlagsEffective = 0x000001
		capNetBindService    = 10
	)
	b := make([]byte, 20) // magic, then permitted and inheritable, low and high words
	binary.LittleEndian.PutUint32(b[0:], vfsCapRevision2|vfsCapFlagsEffective)
	binary.LittleEndian.PutUint32(b[4:], 1<<capNetBindService)
	return string(b)
}()

// rootFS is the uncompressed layer: /etc/, /etc/coredns/ and /coredns,
// owned by root, every time and id fixed so that only the binary's bytes
// decide the digest. The binary is executable by all, so the non-root user
// runs it; /etc/coredns is where a Corefile is mounted.
func rootFS(binary string, mtime time.Time) ([]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, dir := range []string{"etc/", strings.TrimPrefix(confDir, "/")} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: mtime}); err != nil {
			return nil, fmt.Errorf("layer: %w", err)
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(binaryPath, "/"), Mode: 0o755, Size: int64(len(bin)), ModTime: mtime,
		PAXRecords: map[string]string{"SCHILY.xattr.security.capability": netBindServiceCapability}}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// repoTag is the name docker-save's manifest.json gives the image: as
// written, with an explicit tag (Docker cannot load an image without one).
func repoTag(t name.Tag) string {
	s := t.String()
	if !strings.HasSuffix(s, ":"+t.TagStr()) {
		s += ":" + t.TagStr()
	}
	return s
}

// writeArchive writes img to path as Docker 25's `docker save` does (see
// the package comment), through a temporary file so that a failed build
// leaves no half-written tarball behind.
func writeArchive(path string, tag name.Tag, p v1.Platform, mtime time.Time, img v1.Image) (err error) {
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
	a := &archive{tw: tar.NewWriter(tmp), mtime: mtime}
	if err := a.image(tag, p, img); err != nil {
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

// archive writes the entries of the tarball, all with one time.
type archive struct {
	tw    *tar.Writer
	mtime time.Time
}

func (a *archive) image(tag name.Tag, p v1.Platform, img v1.Image) error {
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: a.mtime}); err != nil {
			return err
		}
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := a.file(blobPath(cfgName), cfg); err != nil {
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
	manifest, err := img.RawManifest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	if err := a.file(blobPath(digest), manifest); err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mt,
			Digest:    digest,
			Size:      int64(len(manifest)),
			Platform:  &p,
			// The names Docker 25 gives in `docker save`: containerd and
			// podman name the loaded image from the first.
			Annotations: map[string]string{
				"io.containerd.image.name":          containerdName(tag),
				"org.opencontainers.image.ref.name": tag.TagStr(),
			},
		}},
	}
	if err := a.json("index.json", index); err != nil {
		return err
	}
	docker := tarball.Manifest{{Config: blobPath(cfgName), RepoTags: []string{repoTag(tag)}, Layers: layerPaths}}
	if err := a.json("manifest.json", docker); err != nil {
		return err
	}
	return a.json("oci-layout", map[string]string{"imageLayoutVersion": "1.0.0"})
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
