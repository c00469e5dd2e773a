// Package exampleapi is `make run`'s stand-in for a Kubernetes API server:
// it serves the objects of a directory of YAML files (examples/) over
// HTTP on loopback, lists and watches in JSON as the API server sends them
// to client-go, read-only, and sends watch events when a file is edited.
//
// It is not the API server: no storage, no admission, no defaults, no
// protobuf, no authentication. The integration tests and `make run
// APISERVER=kube` use a real etcd and kube-apiserver (internal/kubeapi);
// this one exists so that a newcomer's first command builds only the DNS
// server and this package, and serves within a couple of minutes on a
// fresh machine rather than after compiling kube-apiserver.
package exampleapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// Server serves a directory's objects.
type Server struct {
	dir   string
	state *state
	logf  func(format string, args ...any)
	// bookmarkEvery is how often a watch that allows bookmarks gets one
	// (the API server: about a minute).
	bookmarkEvery time.Duration
	// LogRequests logs every request, to see what a client asks.
	LogRequests bool
}

// New reads dir's objects; it fails if they cannot be served.
func New(dir string, logf func(format string, args ...any)) (*Server, error) {
	s := &Server{dir: dir, state: newState(), logf: logf, bookmarkEvery: time.Minute}
	objs, err := s.read()
	if err != nil {
		return nil, err
	}
	if _, _, _, err := s.state.replace(objs); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return s, nil
}

// Objects is how many objects are served.
func (s *Server) Objects() int {
	s.state.mu.Lock()
	defer s.state.mu.Unlock()
	return len(s.state.objects)
}

// Serve answers on l until ctx ends, and follows the directory's files,
// looking every interval.
func (s *Server) Serve(ctx context.Context, l net.Listener, interval time.Duration) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go s.follow(ctx, interval)
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if srv.Shutdown(shut) != nil {
			srv.Close()
		}
	}()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// follow reloads the directory when a file in it changes. A file that
// does not parse, or an object that cannot be served, is logged and the
// last good set kept.
func (s *Server) follow(ctx context.Context, interval time.Duration) {
	last, _ := dirSignature(s.dir)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sig, err := dirSignature(s.dir)
		if err != nil || sig == last {
			continue
		}
		last = sig
		s.Reload()
	}
}

// read is the directory's objects, and the ServiceCIDR that
// kube-apiserver creates itself from --service-cluster-ip-range (the
// ranges of internal/kubeapi), unless the directory has its own.
func (s *Server) read() ([]*unstructured.Unstructured, error) {
	objs, err := ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() == "ServiceCIDR" && o.GetName() == defaultServiceCIDR {
			return objs, nil
		}
	}
	cidrs := []any{}
	for _, c := range strings.Split(kubeapi.ServiceCIDRs, ",") {
		cidrs = append(cidrs, c)
	}
	return append(objs, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
		"metadata": map[string]any{"name": defaultServiceCIDR},
		"spec":     map[string]any{"cidrs": cidrs},
	}}), nil
}

// defaultServiceCIDR is the name of the ServiceCIDR kube-apiserver makes.
const defaultServiceCIDR = "kubernetes"

// Reload reads the directory again and sends what changed.
func (s *Server) Reload() {
	objs, err := s.read()
	if err != nil {
		s.logf("%v: serving the objects as they were", err)
		return
	}
	added, modified, deleted, err := s.state.replace(objs)
	if err != nil {
		s.logf("%s: %v: serving the objects as they were", s.dir, err)
		return
	}
	s.logf("%s changed: %d objects added, %d modified, %d deleted", s.dir, added, modified, deleted)
}

// WriteKubeconfig writes a kubeconfig for server (http://host:port): no credentials, since
// the stand-in asks for none.
func WriteKubeconfig(path, server string) error {
	const tmpl = `apiVersion: v1
kind: Config
clusters:
- name: examples
  cluster: {server: %q}
users:
- name: examples
  user: {}
contexts:
- name: examples
  context: {cluster: examples, user: examples}
current-context: examples
`
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create kubeconfig dir: %w", err)
	}
	if err := os.WriteFile(path, fmt.Appendf(nil, tmpl, server), 0o644); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
