package main

import (
	"log/slog"
	"math"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

// setMemoryLimit gives the Go runtime a soft memory limit of 90% of the
// container's (its cgroup's, v1 or v2), so that the collector works
// harder as the process nears the limit instead of the kernel killing it:
// a relist at a large cluster's size briefly holds more than the steady
// state. GOMEMLIMIT, when set, is kept as it is; AUTOMEMLIMIT sets another
// ratio ("0.8") or turns this off ("off"). Stock CoreDNS sets none.
func setMemoryLimit() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || os.Getenv("AUTOMEMLIMIT") == "off" {
		return // the runtime has read GOMEMLIMIT itself
	}
	limit, err := memlimit.Set(memlimit.WithLogger(slog.New(slog.DiscardHandler)))
	switch {
	case err != nil:
		clog.Warningf("no Go memory limit from the container's: %v", err)
	case limit > 0 && limit < math.MaxInt64:
		clog.Infof("Go memory limit %d MiB, from the container's memory limit", limit>>20)
	}
}
