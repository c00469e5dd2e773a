// Command localapi runs a local etcd and kube-apiserver (package
// internal/kubeapi) until interrupted, for `make run`: the DNS server and kubectl
// talk to it through the kubeconfig it writes.
//
//	go run ./test/localapi [-kubeconfig .localapi/kubeconfig] [-log .localapi/kubeapi.log] [-apply examples]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

func main() {
	kubeconfig := flag.String("kubeconfig", filepath.Join(".localapi", "kubeconfig"), "where to write the admin kubeconfig")
	logPath := flag.String("log", filepath.Join(".localapi", "kubeapi.log"), "where etcd and kube-apiserver log")
	apply := flag.String("apply", "", "create the objects of the YAML files in this directory")
	flag.Parse()
	if err := run(*kubeconfig, *logPath, *apply); err != nil {
		fmt.Fprintln(os.Stderr, "localapi:", err)
		os.Exit(1)
	}
}

// run starts the cluster, publishes its kubeconfig and waits for a signal.
// The context also cancels a start still in progress (a first build).
func run(kubeconfig, logPath, apply string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, err := createFile(logPath)
	if err != nil {
		return err
	}
	defer log.Close()

	begin := time.Now()
	c, err := kubeapi.Start(ctx, kubeapi.Options{Log: log})
	if err != nil {
		return err
	}
	defer c.Stop()
	if apply != "" {
		n, err := applyDir(ctx, c.RESTConfig(), apply)
		if err != nil {
			return err
		}
		fmt.Printf("created %d objects from %s\n", n, apply)
	}
	if err := copyKubeconfig(c.Kubeconfig, kubeconfig); err != nil {
		return err
	}
	// The kubeconfig's token dies with the cluster; a stale file would only
	// mislead.
	defer os.Remove(kubeconfig)
	announce(c, kubeconfig, logPath, time.Since(begin))

	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "localapi: stopping")
	return c.Stop()
}

// announce tells the user where the cluster is and how to use it.
func announce(c *kubeapi.Cluster, kubeconfig, logPath string, took time.Duration) {
	abs, err := filepath.Abs(kubeconfig)
	if err != nil {
		abs = kubeconfig
	}
	fmt.Printf("kube-apiserver ready at %s in %s (log: %s)\n", c.Host, took.Round(time.Millisecond), logPath)
	fmt.Printf("export KUBECONFIG=%s\n", abs)
	fmt.Println("Ctrl-C stops it.")
}

// copyKubeconfig copies the admin kubeconfig to dst, keeping it private
// because it holds the admin token.
func copyKubeconfig(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read kubeconfig: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("create kubeconfig dir: %w", err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// createFile creates (or truncates) path and its directory.
func createFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	return f, nil
}
