package server

import (
	"sync/atomic"
	"time"

	"github.com/schemadns/schemadns/internal/procstat"
)

// PeakWatch samples a figure every period until ended and keeps the
// largest: a process's VmRSS when VmHWM cannot be reset, its Go heap in
// use during a relist.
type PeakWatch struct {
	peak, n atomic.Int64 // the largest sample, the samples taken
	stop    chan struct{}
	done    chan struct{}
}

// WatchPeak samples read every period; a read that fails (false) is not
// counted.
func WatchPeak(period time.Duration, read func() (int64, bool)) *PeakWatch {
	w := &PeakWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			if v, ok := read(); ok {
				w.n.Add(1)
				if v > w.peak.Load() {
					w.peak.Store(v)
				}
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// WatchRSS samples the VmRSS of the process pid every 50 ms.
func WatchRSS(pid int) *PeakWatch {
	return WatchPeak(50*time.Millisecond, func() (int64, bool) {
		cur, _, err := procstat.RSS(pid)
		return cur, err == nil
	})
}

// End stops the sampling (once; later calls do nothing) and returns the
// largest sample.
func (w *PeakWatch) End() int64 {
	if w.stop != nil {
		close(w.stop)
		<-w.done
		w.stop = nil
	}
	return w.peak.Load()
}

// Samples are how many samples were taken.
func (w *PeakWatch) Samples() int { return int(w.n.Load()) }
