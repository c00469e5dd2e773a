package dnszone

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// instanceGauge is a 0/1 gauge that is 1 while any plugin instance holds
// it up. A reload starts the new instance before it shuts the old one
// down, so a plain Set(0) at shutdown would report the new, serving
// instance as down.
type instanceGauge struct {
	g  prometheus.Gauge
	mu sync.Mutex
	n  int
}

// newInstanceGauge wraps g.
func newInstanceGauge(g prometheus.Gauge) *instanceGauge { return &instanceGauge{g: g} }

// Up counts one more instance up and returns the function that takes it
// down again (once, however often it is called).
func (ig *instanceGauge) Up() (down func()) {
	ig.mu.Lock()
	ig.n++
	ig.g.Set(1)
	ig.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			ig.mu.Lock()
			defer ig.mu.Unlock()
			if ig.n--; ig.n == 0 {
				ig.g.Set(0)
			}
		})
	}
}
