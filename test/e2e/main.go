// Command e2e runs what operators deploy in a real one-node Kubernetes
// cluster on this machine and writes what it proved to docs/e2e.md
// (`make e2e`).
//
// The cluster is real: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet and kube-proxy built at the pinned Kubernetes
// version (hack/tools.sh e2e), containerd and runc from Debian, the bridge
// and host-local CNI plugins. Every image is built here and imported, since
// no registry can be reached: ours from `make image`, the pause and client
// images by package images.
//
// The program runs twice: on the host, package cluster's Host clears what
// an earlier run left, creates the node's network namespace and runs this
// program again inside it; inside (inner.go), the run starts the cluster
// and runs the scenarios, each a package under scenario/, in the order of
// a run's steps, and writes the report (package report).
//
// Where things are:
//   - cluster: the host, the node and the commands the scenarios give it;
//   - report: the checks, figures and tables, and the pages they make;
//   - scenario: what every scenario shares (Env, the load clients), and
//     below it one package per scenario;
//   - manifests, images: what the scenarios apply, the images they run.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/scenario/disruptions"
	"github.com/schemadns/schemadns/test/e2e/scenario/thresholds"
)

// options are the command-line flags.
type options struct {
	image     string // our image tarball (make image)
	imageRef  string // its name in the runtime
	out       string // the report, Markdown; JSON beside it
	keep      bool   // leave the cluster running at the end (cluster/keep.go)
	relistSvc int    // headless services of the S2 shape for the relist check
	// scale is "default" (the checks of docs/e2e.md), "thresholds" (the
	// relist at S5, package thresholds) or "disruptions" (package
	// disruptions).
	scale string
	// thresholdsScale multiplies S5's services and pods (1: the thresholds).
	thresholdsScale float64
	// summary is the default run's report, where a thresholds run puts its
	// table too.
	summary string
	// deadline bounds the whole run; 0: none.
	deadline time.Duration
}

// thresholds tells whether this is a thresholds run.
func (o options) thresholds() bool { return o.scale == scaleThresholds }

const (
	scaleDefault     = "default"
	scaleThresholds  = thresholds.Scale
	scaleDisruptions = disruptions.Scale
)

func parseFlags() options {
	var o options
	flag.StringVar(&o.image, "image", "bin/schemadns-coredns.tar", "our image tarball, from make image")
	flag.StringVar(&o.imageRef, "image-ref", "", "our image's name (default: read from the tarball)")
	flag.StringVar(&o.out, "out", "", "the report (Markdown; the figures as JSON beside it); default docs/e2e.md, docs/e2e-thresholds.md with -scale thresholds")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster running at the end, even after a failure, for a look around: the run prints how to reach it; bin/e2e -clean stops and removes it, and no new run starts until then")
	flag.IntVar(&o.relistSvc, "relist-services", 10000, "headless services × 10 endpoints (the S2 shape) loaded for the forced-relist check")
	flag.StringVar(&o.scale, "scale", scaleDefault, "default: the checks of docs/e2e.md; thresholds: the relist of each DNS server at S5, the Kubernetes scalability thresholds (docs/e2e-thresholds.md); disruptions: killed pods, node-local rollouts and a drain, with and without node-local, ours and stock (docs/e2e-disruptions.md)")
	flag.Float64Var(&o.thresholdsScale, "thresholds-scale", 1, "with -scale thresholds: S5's services and pods times this (0.1 for a quick run)")
	flag.StringVar(&o.summary, "summary", "docs/e2e.md", "with -scale thresholds or disruptions: the default run's report, whose section of that scale the run replaces")
	flag.DurationVar(&o.deadline, "deadline", 0, "stop the run, and clean up, after this long (default: none; 150m with -scale thresholds)")
	cleanOnly := flag.Bool("clean", false, "only stop and remove what an earlier run left behind: a cluster kept by -keep, or what a killed run left")
	flag.Parse()
	switch o.scale {
	case scaleDefault:
	case scaleThresholds:
		if o.deadline == 0 {
			o.deadline = thresholds.Deadline
		}
	case scaleDisruptions:
	default:
		fmt.Fprintf(os.Stderr, "e2e: -scale %q: want %s, %s or %s\n", o.scale, scaleDefault, scaleThresholds, scaleDisruptions)
		os.Exit(2)
	}
	if o.thresholdsScale <= 0 || o.thresholdsScale > 1 {
		fmt.Fprintf(os.Stderr, "e2e: -thresholds-scale %g: want more than 0, at most 1\n", o.thresholdsScale)
		os.Exit(2)
	}
	if o.out == "" {
		o.out = "docs/e2e.md"
		if o.scale != scaleDefault {
			o.out = "docs/e2e-" + o.scale + ".md"
		}
	}
	if *cleanOnly {
		if err := cluster.Clean(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	return o
}

func main() {
	o := parseFlags()
	var err error
	if cluster.Inside() {
		err = inner(o)
	} else {
		err = cluster.Host(o.keep, o.deadline)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: FAIL:", err)
		os.Exit(1)
	}
}
