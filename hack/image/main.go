// Command image builds the schemadns CoreDNS container image from a static
// linux binary, without a container engine, and writes it as one tarball
// that `docker load` and `podman load` both accept (`make image` runs it).
//
// The image is the binary on an empty base, with OCI media types and fixed
// timestamps: two builds of the same binary give the same image digest.
// Package internal/ociimage builds it and writes the tarball in the layout
// of `docker save` since Docker 25 (its WriteDockerSave says why that
// layout); this command checks the binary and says what the image runs.
package main

import (
	"debug/elf"
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

	"github.com/schemadns/schemadns/internal/ociimage"
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
	if err := ociimage.WriteDockerSave(opts.out, opts.tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %s %s (%s)\n", opts.out, ociimage.RepoTag(opts.tag), digest, opts.platform.String())
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
	files, err := rootFS(opts.binary)
	if err != nil {
		return nil, err
	}
	img, err := ociimage.Build(ociimage.Spec{
		Files:    files,
		Config:   imageConfig(opts),
		Platform: opts.platform,
		Created:  opts.created,
		History: v1.History{
			Created:   v1.Time{Time: opts.created},
			CreatedBy: "hack/image: COPY " + filepath.Base(opts.binary) + " " + binaryPath,
			Comment:   "schemadns " + opts.version,
		},
		OCI: true,
	})
	if err != nil {
		return nil, err
	}
	return img, nil
}

func imageConfig(opts options) v1.Config {
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
	return v1.Config{
		User:         user,
		Entrypoint:   entrypoint,
		ExposedPorts: exposed,
		WorkingDir:   "/",
		Labels:       labels,
	}
}

// capNetBindService is CAP_NET_BIND_SERVICE in linux/capability.h.
const capNetBindService = 10

// netBindServiceCapability is the security.capability extended attribute
// that `setcap cap_net_bind_service=+ep` writes: CAP_NET_BIND_SERVICE
// permitted and effective. The image runs as user 65532, and a capability
// the pod spec adds reaches a non-root process only through its file's
// capability set (runtimes set no ambient capabilities): without it
// /coredns could not bind port 53 unless the runtime lowers
// net.ipv4.ip_unprivileged_port_start, which a host-network pod (the
// node-local cache) never gets. It lands in the layer as a PAX record, as
// docker build stores it.
var netBindServiceCapability = ociimage.FileCapabilities(capNetBindService)

// rootFS is the layer: /etc/, /etc/coredns/ and /coredns, owned by root,
// every time and id fixed so that only the binary's bytes decide the
// digest. The binary is executable by all, so the non-root user runs it;
// /etc/coredns is where a Corefile is mounted.
func rootFS(binary string) ([]ociimage.File, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	return []ociimage.File{
		{Path: "/etc/", Mode: 0o755},
		{Path: confDir, Mode: 0o755},
		{Path: binaryPath, Mode: 0o755, Data: bin,
			Xattrs: map[string]string{ociimage.CapabilityXattr: netBindServiceCapability}},
	}, nil
}
