package mesosschema

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tmaster "github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// heapObjects is the Go heap's object bytes: live objects and dead ones
// not yet swept.
func heapObjects() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap runs fn with the collector at GOGC=10, so that the heap's
// object bytes stay within a tenth of the live bytes, and returns the
// highest object bytes sampled every 200µs above those after a forced GC
// before fn, and the heap in use after a forced GC once fn is done.
func peakHeap(fn func()) (peak, after uint64) {
	old := debug.SetGCPercent(10)
	defer debug.SetGCPercent(old)
	runtime.GC()
	base := heapObjects()
	var high atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			if h := heapObjects(); h > high.Load() {
				high.Store(h)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	fn()
	close(stop)
	wg.Wait()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return high.Load() - min(base, high.Load()), ms.HeapInuse
}

// bigState is the 20,000-task state of the memory figures: BenchShape
// doubled.
func bigState() *mesosstate.State {
	shape := mesosstatetest.BenchShape
	shape.Tasks, shape.Frameworks, shape.Agents = 20000, 200, 1000
	return mesosstatetest.Generate(shape)
}

// maxPollBodies bounds a poll's peak heap, in bodies of the state it
// reads (docs/operations.md): the decoded State and the wire bytes.
const maxPollBodies = 2

// TestPollMemory measures what a poll of a new 20,000-task state holds at
// its peak, compressed and not, against the body's size.
func TestPollMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory")
	}
	body := mesosstatetest.Marshal(bigState())
	master, err := tmaster.Start(tmaster.Options{Body: body})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	// The same state uncompressed, chunked (no Content-Length), as a
	// master behind a proxy may send it.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for b := body; len(b) > 0; {
			n := min(len(b), 1<<20)
			_, _ = w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	defer plain.Close()
	for _, c := range []struct{ name, addr string }{{"gzip", master.Addr()}, {"chunked", plain.Listener.Addr().String()}} {
		client, err := mesosmaster.New(mesosmaster.Config{Masters: []string{c.addr}})
		if err != nil {
			t.Fatal(err)
		}
		var st *mesosstate.State
		// A first fetch makes the stand-in compress its body once.
		_, _ = client.Fetch(context.Background(), func(io.Reader, string) (string, error) { return "", nil })
		client.Stop()
		if client, err = mesosmaster.New(mesosmaster.Config{Masters: []string{c.addr}}); err != nil {
			t.Fatal(err)
		}
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		peak, _ := peakHeap(func() {
			_, err = client.Fetch(context.Background(), func(b io.Reader, _ string) (string, error) {
				s, err := mesosstate.NewDecoder().Decode(b)
				st = s
				return "", err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("%s: body %d MiB, peak %d MiB (%.1f bodies), allocated %d MiB, heap in use after GC %d MiB", c.name, len(body)>>20, peak>>20,
			float64(peak)/float64(len(body)), (ms.TotalAlloc-before.TotalAlloc)>>20, ms.HeapInuse>>20)
		if peak > maxPollBodies*uint64(len(body)) {
			t.Errorf("%s: a poll's peak is %.1f bodies, over the %d documented", c.name, float64(peak)/float64(len(body)), maxPollBodies)
		}
		runtime.KeepAlive(st)
		client.Stop()
	}
}
