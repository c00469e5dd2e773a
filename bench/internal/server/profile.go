package server

import (
	"fmt"
	"os"
	"path/filepath"
)

// SaveHeapProfile saves s's heap profile, measured on the shape named, to
// the -profile directory (nothing without -profile).
func SaveHeapProfile(dir, shapeName string, s *Server) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", s.pprof))
	if err != nil {
		return fmt.Errorf("heap profile of %s: %w", s, err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-heap-%s.pprof", shapeName, s.Key))
	return os.WriteFile(path, []byte(body), 0o644)
}

// CPUProfile records s's CPU profile over the next secs seconds to path,
// and says when it is written.
func CPUProfile(s *Server, secs int, path string) <-chan error {
	done := make(chan error, 1)
	go func() {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", s.pprof, secs))
		if err != nil {
			done <- fmt.Errorf("CPU profile of %s: %w", s, err)
			return
		}
		done <- os.WriteFile(path, []byte(body), 0o644)
	}()
	return done
}
