package observe

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/schemadns/schemadns/soak/server"
)

// Health is what readiness and a connection gauge said, sampled every
// 250 ms, in each phase of a fault.
type Health struct {
	// gaugeOf is the server whose gauge (the metric gaugeName) is read;
	// SizeName, when set, is a metric of the same server whose lowest and
	// highest value are kept by phase (the Mesos zone's names).
	gaugeOf, gaugeName, SizeName string

	mu sync.Mutex
	// ready counts, by server and phase, the samples that were ready
	// and all samples.
	ready, samples map[string]map[string]int
	// gauge is the lowest gauge per phase (over its samples: ours' over
	// the resources); down and up are when it first read 0 after the
	// fault began and 1 again after it ended, -1 if never.
	gauge, gaugeLast map[string]float64 // gaugeLast: the phase's last sample
	size             map[string][2]float64
	faultAt, endedAt time.Time
	down, up         float64
}

// Phases of a fault.
const (
	PhaseBefore = "before"
	PhaseDuring = "during"
	PhaseAfter  = "after"
)

// NewHealth samples readiness, and gaugeName of the server gaugeOf.
func NewHealth(gaugeOf, gaugeName string) *Health {
	return &Health{gaugeOf: gaugeOf, gaugeName: gaugeName, ready: map[string]map[string]int{}, samples: map[string]map[string]int{},
		gauge: map[string]float64{}, gaugeLast: map[string]float64{}, size: map[string][2]float64{}, down: -1, up: -1}
}

// Watch samples until ctx ends.
func (h *Health) Watch(ctx context.Context, servers []*server.Server) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		h.sample(servers)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (h *Health) phase() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.faultAt.IsZero():
		return PhaseBefore
	case h.endedAt.IsZero():
		return PhaseDuring
	}
	return PhaseAfter
}

func (h *Health) sample(servers []*server.Server) {
	ph := h.phase()
	for _, s := range servers {
		ready := s.IsReady()
		var gauge, size []float64
		if s.Key == h.gaugeOf {
			gauge, _ = s.Metric(h.gaugeName)
			if h.SizeName != "" {
				size, _ = s.Metric(h.SizeName)
			}
		}
		h.record(s.Key, ph, ready, gauge)
		h.recordSize(ph, size)
	}
}

// recordSize keeps the lowest and highest of the size metric's samples.
func (h *Health) recordSize(ph string, size []float64) {
	if len(size) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	lo, hi := slices.Min(size), slices.Max(size)
	if old, ok := h.size[ph]; ok {
		lo, hi = min(lo, old[0]), max(hi, old[1])
	}
	h.size[ph] = [2]float64{lo, hi}
}

// Sizes returns the size metric's lowest and highest value by phase, and
// the gauge's last sample by phase.
func (h *Health) Sizes() (map[string][2]float64, map[string]float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.size), maps.Clone(h.gaugeLast)
}

func (h *Health) record(key, ph string, ready bool, gauge []float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ready[key] == nil {
		h.ready[key], h.samples[key] = map[string]int{}, map[string]int{}
	}
	h.samples[key][ph]++
	if ready {
		h.ready[key][ph]++
	}
	if len(gauge) == 0 {
		return
	}
	low := slices.Min(gauge)
	h.gaugeLast[ph] = low
	if old, ok := h.gauge[ph]; !ok || low < old {
		h.gauge[ph] = low
	}
	switch {
	case ph == PhaseDuring && low == 0 && h.down < 0:
		h.down = time.Since(h.faultAt).Seconds()
	case ph == PhaseAfter && low == 1 && h.up < 0:
		h.up = time.Since(h.endedAt).Seconds()
	}
}

// FaultBegins starts the phase during the fault.
func (h *Health) FaultBegins() { h.mark(&h.faultAt) }

// FaultEnds starts the phase after the fault, and returns when.
func (h *Health) FaultEnds() time.Time {
	h.mark(&h.endedAt)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.endedAt
}

func (h *Health) mark(at *time.Time) {
	h.mu.Lock()
	*at = time.Now()
	h.mu.Unlock()
}

// UpAt is the seconds from the fault's end until the gauge read 1 again,
// -1 while it has not.
func (h *Health) UpAt() float64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.up
}

// Summary returns by server and phase "ready samples/samples", the
// gauge's lowest by phase, and when it went down and up (see Health).
func (h *Health) Summary() (map[string]map[string]string, map[string]float64, float64, float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ready := map[string]map[string]string{}
	for key, by := range h.samples {
		ready[key] = map[string]string{}
		for ph, n := range by {
			ready[key][ph] = fmt.Sprintf("%d/%d", h.ready[key][ph], n)
		}
	}
	return ready, h.gauge, h.down, h.up
}
