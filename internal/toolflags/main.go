package toolflags

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// started is when the tool started, for the progress lines.
var started = time.Now()

// Logf prints a progress line on stderr with the seconds since the tool
// started.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

// Main is a tool's main: it parses the command line, then runs the tool
// until it is done or interrupted (SIGINT, SIGTERM cancel its context).
// The exit status is 0 after -h, 2 for a bad command line and 1 when the
// run fails, each error printed after the tool's name.
func Main[C any](name string, parse func(args []string) (C, error), run func(ctx context.Context, cfg C, args []string) error) {
	cfg, err := parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// SleepCtx sleeps for d, or until ctx ends: then it returns ctx's error.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
