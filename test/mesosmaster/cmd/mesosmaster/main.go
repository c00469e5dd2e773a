// Command mesosmaster runs the stand-in Mesos master of package
// test/mesosmaster, for demos: it serves a recorded /master/state (such
// as examples/mesos/state.json) byte for byte until interrupted.
//
//	go run ./test/mesosmaster/cmd/mesosmaster -state examples/mesos/state.json
//	curl -s http://127.0.0.1:5050/master/state
//
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

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/test/mesosmaster"
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
		if _, err := mesosstate.Decode(body); err != nil {
			fmt.Fprintf(out, "mesosmaster: warning: %s is not a good state (%v); serving it anyway\n", *stateFile, err)
		}
		opts.Body = body
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
