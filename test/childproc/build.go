package childproc

import (
	"fmt"
	"os/exec"
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
