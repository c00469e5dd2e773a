package kubeapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/schemadns/schemadns/internal/childproc"
)

// tool is a binary that hack/tools.sh builds from the module hack/tools/<name>,
// named after the version that module requires of its main module.
type tool struct {
	name   string // file name prefix
	dir    string // the module's directory under hack/tools
	module string // the module whose version keys the binary
}

var (
	etcdTool      = tool{name: "etcd", dir: "etcd", module: "go.etcd.io/etcd/server/v3"}
	apiServerTool = tool{name: "kube-apiserver", dir: "kube-apiserver", module: "k8s.io/kubernetes"}
	kubectlTool   = tool{name: "kubectl", dir: "kube-apiserver", module: "k8s.io/kubernetes"}
)

// errNoRepo means the repository, and with it hack/tools.sh and the pinned
// versions, could not be found.
var errNoRepo = errors.New("cannot find the schemadns repository (a directory with go.mod and hack/tools.sh) above the working directory or this source file; set Options.EtcdBinary and Options.APIServerBinary")

// binaries returns the etcd and kube-apiserver paths, running hack/tools.sh
// first when the pinned versions are not built yet.
func binaries(ctx context.Context, opts Options) (etcd, apiServer string, err error) {
	if opts.EtcdBinary != "" && opts.APIServerBinary != "" {
		return opts.EtcdBinary, opts.APIServerBinary, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	dir := toolsDir(opts.ToolsDir)
	if etcd, err = toolPath(root, dir, etcdTool); err != nil {
		return "", "", err
	}
	if apiServer, err = toolPath(root, dir, apiServerTool); err != nil {
		return "", "", err
	}
	if !exists(etcd) || !exists(apiServer) {
		if err := runToolsScript(ctx, root, dir, "apiserver"); err != nil {
			return "", "", err
		}
	}
	return cmp.Or(opts.EtcdBinary, etcd), cmp.Or(opts.APIServerBinary, apiServer), nil
}

// Kubectl returns the path of the kubectl built from the same Kubernetes
// release as the API server, running hack/tools.sh first when it is not
// built yet. The deploy tests render and dry-run manifests with it.
func Kubectl(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := toolsDir("")
	path, err := toolPath(root, dir, kubectlTool)
	if err != nil {
		return "", err
	}
	if !exists(path) {
		if err := runToolsScript(ctx, root, dir, "kubectl"); err != nil {
			return "", err
		}
	}
	return path, nil
}

// toolsDir applies the same default as hack/tools.sh.
func toolsDir(dir string) string {
	if dir != "" {
		return dir
	}
	if dir = os.Getenv("SCHEMADNS_TOOLS_DIR"); dir != "" {
		return dir
	}
	// os.UserCacheDir is $XDG_CACHE_HOME or ~/.cache on Linux, as in the
	// script; on macOS it would differ, so spell the rule out.
	if cache := os.Getenv("XDG_CACHE_HOME"); cache != "" {
		return filepath.Join(cache, "schemadns", "tools")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "schemadns", "tools")
}

// toolPath is where hack/tools.sh puts t: <dir>/<name>-<version>.
func toolPath(root, dir string, t tool) (string, error) {
	gomod := filepath.Join(root, "hack", "tools", t.dir, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		return "", fmt.Errorf("read tool version: %w", err)
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		return "", fmt.Errorf("parse %s: %w", gomod, err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == t.module {
			return filepath.Join(dir, t.name+"-"+r.Mod.Version), nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, t.module)
}

// runToolsScript builds the missing binaries (which: apiserver or kubectl,
// not the other test tools), showing its progress on stderr because the
// first kube-apiserver build takes minutes and silence would look like a
// hang.
func runToolsScript(ctx context.Context, root, dir, which string) error {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "tools.sh"), which)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "SCHEMADNS_TOOLS_DIR="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Cancelling must stop the go build under the script too, and let the
	// script remove its build directory before it is killed for good.
	cmd.SysProcAttr = childproc.Attr()
	cmd.Cancel = func() error {
		childproc.TerminateGroup(cmd.Process.Pid)
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/tools.sh: %w", err)
	}
	return nil
}

// RepoRoot finds the repository by walking up from the working directory
// (a test runs in its package directory), then from this source file (a
// command run from elsewhere, when built without -trimpath).
func RepoRoot() (string, error) {
	starts := []string{}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	for _, dir := range starts {
		if root, ok := walkUp(dir); ok {
			return root, nil
		}
	}
	return "", errNoRepo
}

// walkUp returns the first directory at or above dir with go.mod and
// hack/tools.sh; go.mod alone would stop at a nested module.
func walkUp(dir string) (string, bool) {
	for {
		if exists(filepath.Join(dir, "go.mod")) && exists(filepath.Join(dir, "hack", "tools.sh")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
