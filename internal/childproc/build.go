package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// BuildCoreDNS builds the repository's CoreDNS main package (pkg, a path
// such as ../coredns, relative to the test's directory) into out, with
// ldflags if given (a version stamp).
func BuildCoreDNS(pkg, out, ldflags string) error {
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.Command("go", append(args, pkg)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// CoreDNSBuild builds the binary once per test run, however many tests ask
// for it.
type CoreDNSBuild struct {
	Pkg, LDFlags string // as BuildCoreDNS takes them

	once sync.Once
	path string
	err  error
}

// Path is the built binary, in a directory of its own.
func (b *CoreDNSBuild) Path() (string, error) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "schemadns-bin")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "coredns")
		b.err = BuildCoreDNS(b.Pkg, b.path, b.LDFlags)
	})
	return b.path, b.err
}
