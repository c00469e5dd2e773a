package main

import (
	"archive/tar"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/schemadns/schemadns/test/e2e/images"
)

var (
	//go:embed manifests/stock-coredns.yaml
	stockManifest []byte
	//go:embed manifests/workloads.yaml
	workloadsManifest []byte
	//go:embed manifests/load.yaml
	loadManifest []byte
)

// pauseImage is containerd's sandbox image.
const pauseImage = images.Pause

// loadRate is each load pod's lookups per second (two pods: glibc, musl),
// made by loadThreads threads: above the 100/s asked, so that a few
// lookups stalled for a resolver timeout still leave the phase at 100/s.
const (
	loadRate    = 150
	loadThreads = 10
)

// e2e is one run inside the namespace: the cluster, the stub and the report.
type e2e struct {
	o        options
	n        *node
	stub     *stub
	rep      *report
	ourImage string // containerd's name of our image
	ourTag   string // its tag, for the kustomize override
	start    time.Time
	thr      *thresholdsRun // a thresholds run's findings, once S5 is loaded
	// disruptionRows are the clients' lookups through each disruption.
	disruptionRows []disruptionRow
}

// inner starts the cluster, runs every check and writes the report. It
// stops the cluster on return; the outer run clears the rest.
func inner(o options) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if o.deadline > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, o.deadline)
		defer stop()
	}
	rep := newReport()
	switch o.scale {
	case scaleThresholds:
		rep = newThresholdsReport()
	case scaleDisruptions:
		rep = newDisruptionsReport()
	}
	e := &e2e{o: o, rep: rep, start: time.Now()}
	err := e.run(ctx)
	if err != nil {
		e.rep.fail("run", err.Error())
	}
	if werr := e.rep.write(o.out); werr != nil {
		err = errors.Join(err, werr)
	}
	if o.scale != scaleDefault {
		if werr := e.rep.spliceInto(o.summary); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if e.stub != nil {
		e.stub.stop()
	}
	if e.n != nil && !o.keep {
		e.n.stop()
	}
	if err == nil && e.rep.failed() {
		err = fmt.Errorf("%d checks failed (see %s)", e.rep.failures(), o.out)
	}
	return err
}

func (e *e2e) logf(format string, args ...any) {
	fmt.Printf("e2e %6.1fs: %s\n", time.Since(e.start).Seconds(), fmt.Sprintf(format, args...))
}

// run is the whole sequence; each step's failure is fatal only where later
// steps cannot go on without it.
func (e *e2e) run(ctx context.Context) error {
	cfg := defaultCluster
	if e.o.thresholds() {
		cfg = thresholdsCluster
	}
	var err error
	e.n, err = startNode(ctx, cfg, e.o.keep, e.logf)
	if err != nil {
		return err
	}
	e.rep.figure("cluster start-up", fmt.Sprintf("%.0f s", time.Since(e.start).Seconds()))
	if err := e.loadImages(ctx); err != nil {
		return err
	}
	if e.stub, err = startStub(); err != nil {
		return err
	}
	switch e.o.scale {
	case scaleThresholds:
		return e.runSteps(ctx, e.thresholdsSteps())
	case scaleDisruptions:
		return e.runSteps(ctx, e.disruptionsSteps())
	}
	return e.runSteps(ctx, []runStep{
		{"stock CoreDNS installed", e.installStock},
		{"workloads", e.startWorkloads},
		{"upgrade and rollback", e.upgradeAndRollback},
		{"real resolvers", e.checkResolvers},
		{"real controllers", e.checkControllers},
		{"DNS pod killed", e.checkKill},
		{"node-local autopath", e.checkNodeLocal},
		{"disruptions through node-local", e.checkNodeLocalDisruptions},
		{"multicluster", e.checkMulticluster},
		{"memory limit under a forced relist", e.checkRelist},
	})
}

// runStep is one step of a run: its failure is reported, and ends the run
// only if it wraps errFatal.
type runStep struct {
	name string
	fn   func(context.Context) error
}

// runSteps runs the steps in order and times each.
func (e *e2e) runSteps(ctx context.Context, steps []runStep) error {
	for _, s := range steps {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.logf("== %s", s.name)
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			e.rep.fail(s.name, err.Error())
			e.logf("%s: FAILED: %v", s.name, err)
			if errors.Is(err, errFatal) {
				return err
			}
		}
		e.rep.duration(s.name, time.Since(start))
	}
	return nil
}

// errFatal marks a failure after which nothing else can be checked.
var errFatal = errors.New("cannot go on")

// loadImages builds the test images and imports them with ours.
func (e *e2e) loadImages(ctx context.Context) error {
	start := time.Now()
	built, err := images.Build(ctx, path("images"))
	if err != nil {
		return fmt.Errorf("build test images: %w", err)
	}
	ref, err := imageRef(e.o.image)
	if err != nil {
		return err
	}
	e.ourImage = ref
	e.ourTag = ref[strings.LastIndex(ref, ":")+1:]
	tars := []string{e.o.image}
	for _, im := range built {
		tars = append(tars, im.Tar)
	}
	for _, t := range tars {
		if err := e.n.importImage(ctx, t); err != nil {
			return err
		}
	}
	e.logf("images built and imported in %.1fs; ours is %s", time.Since(start).Seconds(), ref)
	return nil
}

// imageRef reads the tag make image gave the tarball (manifest.json).
func imageRef(tarPath string) (string, error) {
	f, err := os.Open(tarPath)
	if err != nil {
		return "", fmt.Errorf("our image (make image): %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", fmt.Errorf("%s has no manifest.json", tarPath)
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", tarPath, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", fmt.Errorf("%s: manifest.json: %w", tarPath, err)
		}
		if len(m) != 1 || len(m[0].RepoTags) != 1 {
			return "", fmt.Errorf("%s: want one image with one tag, have %+v", tarPath, m)
		}
		return m[0].RepoTags[0], nil
	}
}

// placeholders are the names the embedded manifests use for images and
// addresses.
func (e *e2e) placeholders() map[string]string {
	return map[string]string{
		"STOCK_IMAGE":   e.ourImage,
		"DNS_VIP":       dnsVIP,
		"BUSYBOX_IMAGE": images.Busybox,
		"GLIBC_IMAGE":   images.GlibcClient,
		"MUSL_IMAGE":    images.MuslClient,
		"RATE":          fmt.Sprint(loadRate),
		"THREADS":       fmt.Sprint(loadThreads),
	}
}
