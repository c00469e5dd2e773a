package handover

import (
	"sync"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	clog "github.com/coredns/coredns/plugin/pkg/log"
)

const pluginName = "handover"

var log = clog.NewWithPlugin(pluginName)

func init() { plugin.Register(pluginName, setup) }

// pollEvery is how often a shutting-down process looks for the sockets of
// the process that takes over, which may bind after it was told to stop.
const pollEvery = 20 * time.Millisecond

// watch hands this process's UDP listeners over, once told to shut down
// for good, whenever another process binds their addresses; it stops when
// all are handed over, or with the process.
type watch struct {
	once sync.Once
}

func setup(c *caddy.Controller) error {
	for i := 0; c.Next(); i++ {
		if i > 0 {
			return plugin.Error(pluginName, plugin.ErrOnce)
		}
		if len(c.RemainingArgs()) != 0 {
			return plugin.Error(pluginName, c.ArgErr())
		}
		if c.NextBlock() {
			return plugin.Error(pluginName, c.Errf("unknown property %q", c.Val()))
		}
	}
	w := &watch{}
	// A final shutdown only (not a reload): the lameduck of health runs in
	// the same callbacks, so the watch starts in a goroutine of its own.
	c.OnFinalShutdown(func() error {
		w.once.Do(func() { go w.run() })
		return nil
	})
	return nil
}

// run hands over every listener whose address another process shares,
// as soon as one does, until all are handed over.
func (w *watch) run() {
	handed := map[uint64]bool{}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		socks, err := ownSockets()
		if err != nil {
			log.Warning(err)
			return
		}
		var pending []socket
		for _, s := range socks {
			if !handed[s.inode] {
				pending = append(pending, s)
			}
		}
		if len(pending) == 0 && len(handed) > 0 {
			return
		}
		if bound, err := boundUDP(); err == nil {
			for _, s := range handOver(pending, bound) {
				handed[s.inode] = true
				handedOver.Inc()
				log.Infof("%s handed over to the process beside this one", s.local)
			}
		}
		<-t.C
	}
}
