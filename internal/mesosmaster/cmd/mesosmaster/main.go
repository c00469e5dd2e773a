// Command mesosmaster runs the stand-in Mesos master of package
// internal/mesosmaster, for demos: it serves a recorded /master/state (such
// as examples/mesos/state.json) byte for byte until interrupted.
//
//	go run ./internal/mesosmaster/cmd/mesosmaster -state examples/mesos/state.json
//	curl -s http://127.0.0.1:5050/master/state
//
// With -own the state is served as the listening master's own (its leader
// names it), so that a client follows no recorded leader elsewhere.
// Several can run side by side on 127.0.0.2, 127.0.0.3... with one port,
// the non-leaders pointing at the leader with -leader.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mesosmaster:", err)
		os.Exit(2)
	}
}

// run serves until ctx is done, saying where on out.
func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("mesosmaster", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:5050", "loopback `host:port` to listen on")
	stateFile := fs.String("state", "", "`file` served as /master/state, byte for byte (default: an empty cluster naming this master)")
	own := fs.Bool("own", false, "serve the state as this master's own: its leader, pid and leader_info name this master "+
		"(a recorded state names the master it was recorded from, which a client would then ask)")
	leader := fs.String("leader", "", "`host:port` of the leading master to redirect to; empty: this one leads; "+
		mesosmaster.NoLeader+": no leader (503)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := mesosmaster.Options{Listen: *listen, Leader: *leader}
	if *stateFile != "" {
		body, err := os.ReadFile(*stateFile)
		if err != nil {
			return err
		}
		st, err := mesosstate.Decode(body)
		switch {
		case err != nil && *own:
			return fmt.Errorf("-own: %s: %w", *stateFile, err)
		case err != nil:
			fmt.Fprintf(out, "mesosmaster: warning: %s is not a good state (%v); serving it anyway\n", *stateFile, err)
		}
		if *own {
			opts.State = st
		} else {
			opts.Body = body
		}
	}
	m, err := mesosmaster.Start(opts)
	if err != nil {
		return err
	}
	defer m.Close()
	fmt.Fprintf(out, "mesosmaster: serving %s/master/state\n", m.URL())
	<-ctx.Done()
	return nil
}
