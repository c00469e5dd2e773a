package dnszone

import (
	"cmp"

	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
	"github.com/schemadns/schemadns/plugin/pkg/changes"
)

// Start runs the schema's build loop c (its Synced and Published are filled
// in here) and waits up to c.StartupTimeout for the first snapshot; after
// that, serving starts anyway (with SERVFAIL until the source syncs) and
// the reason stays in the log. For the plugin's OnStartup.
func (srv *Server) Start(c changes.Consumer, m *Metrics) error {
	c.Synced, c.Published = m.Synced, srv.Ready
	started, err := c.Start()
	if err != nil {
		return plugin.Error(srv.Plugin, err)
	}
	srv.stop = started.Stop
	if started.Late != nil {
		clog.NewWithPlugin(srv.Plugin).Warningf("starting to serve before %s (startup_timeout %s): %v",
			cmp.Or(started.Awaited, "the source synced"), c.StartupTimeout, started.Late)
	}
	return nil
}

// Shutdown ends what Start started; for the plugin's OnShutdown.
func (srv *Server) Shutdown() error {
	if srv.stop != nil {
		srv.stop()
		srv.stop = nil
	}
	return nil
}
