// Command exampleapi serves the objects of examples/ as a Kubernetes API
// server would list and watch them (package internal/exampleapi), for
// `make run`: read-only, plain HTTP on loopback, and an edited file is
// sent to the watches as changes. It writes a kubeconfig that points at
// it and serves until interrupted.
//
//	go run ./hack/exampleapi [-dir examples] [-kubeconfig .localapi/kubeconfig]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/internal/exampleapi"
)

func main() {
	dir := flag.String("dir", "examples", "the directory of YAML files to serve")
	listen := flag.String("listen", "127.0.0.1:0", "the address to serve on (loopback)")
	kubeconfig := flag.String("kubeconfig", filepath.Join(".localapi", "kubeconfig"), "where to write a kubeconfig that points here")
	interval := flag.Duration("interval", time.Second, "how often to look for edited files")
	verbose := flag.Bool("v", false, "log every request")
	flag.Parse()
	if err := run(*dir, *listen, *kubeconfig, *interval, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "exampleapi:", err)
		os.Exit(1)
	}
}

func run(dir, listen, kubeconfig string, interval time.Duration, verbose bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := log.New(os.Stderr, "exampleapi: ", log.LstdFlags)
	srv, err := exampleapi.New(dir, logger.Printf)
	if err != nil {
		return err
	}
	srv.LogRequests = verbose
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if err := exampleapi.WriteKubeconfig(kubeconfig, "http://"+l.Addr().String()); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)
	logger.Printf("serving %d objects of %s at http://%s (read-only; edit the files and the server sees the change within %s)",
		srv.Objects(), dir, l.Addr(), interval)
	return srv.Serve(ctx, l, interval)
}
