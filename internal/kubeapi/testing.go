package kubeapi

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

// shared is the cluster that ForTest started for this test binary. A test
// binary is one process per package, so a package variable has exactly the
// one-cluster-per-package scope wanted; Shared is its only reader.
var shared struct {
	cluster *Cluster
	err     error  // why there is no cluster: Shared fails with it
	skip    string // why there is no cluster: Shared skips with it
}

// startBudget bounds Start in ForTest, including a first build of the
// binaries (about ten minutes on 2 cores). TestMain runs before `go test`'s
// -timeout clock starts, which is why the build belongs there.
const startBudget = 20 * time.Minute

// ForTest is the whole body of a package's TestMain: it starts one cluster,
// runs the tests, stops the cluster and exits with the tests' status. If
// Start fails, every test calling Shared fails with the reason; with -short
// nothing starts and those tests are skipped. When a test fails, the work
// directory is kept and its path printed, for the processes' log.
func ForTest(m *testing.M, opts Options) {
	os.Exit(runShared(m, opts))
}

// runShared does ForTest's work and returns the exit status, so that the
// deferred Stop runs before os.Exit.
func runShared(m *testing.M, opts Options) int {
	// testing.Short panics before the flags are parsed; m.Run would parse
	// them, but only after we need them.
	if !flag.Parsed() {
		flag.Parse()
	}
	if testing.Short() {
		shared.skip = "needs etcd and kube-apiserver; skipped with -short"
		return m.Run()
	}
	c, err := startShared(opts)
	if err != nil {
		shared.err = err
		return m.Run()
	}
	shared.cluster = c
	code := m.Run()
	if code != 0 && c.ownWorkDir && opts.Log == nil {
		c.ownWorkDir = false
		fmt.Fprintf(os.Stderr, "kubeapi: tests failed; kept %s (log: %s)\n", c.WorkDir, c.LogPath)
	}
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "kubeapi: %v\n", err)
	}
	return code
}

// startShared starts the cluster and reports how long it took, which is
// printed with -v or when the package fails.
func startShared(opts Options) (*Cluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startBudget)
	defer cancel()
	begin := time.Now()
	c, err := Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start shared cluster: %w", err)
	}
	fmt.Fprintf(os.Stderr, "kubeapi: cluster ready at %s in %s (work dir %s)\n",
		c.Host, time.Since(begin).Round(time.Millisecond), c.WorkDir)
	return c, nil
}

// Shared returns the cluster that ForTest started for this package, failing
// tb if it could not start and skipping tb with -short.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	switch {
	case shared.skip != "":
		tb.Skip(shared.skip)
	case shared.err != nil:
		tb.Fatal(shared.err)
	case shared.cluster == nil:
		tb.Fatal("kubeapi.Shared: no cluster; call kubeapi.ForTest from TestMain")
	}
	return shared.cluster
}
