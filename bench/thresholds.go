package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/bench/internal/churn"
	"github.com/schemadns/schemadns/bench/internal/fixture"
	"github.com/schemadns/schemadns/bench/internal/perf"
	"github.com/schemadns/schemadns/bench/internal/querymix"
	"github.com/schemadns/schemadns/bench/internal/results"
	"github.com/schemadns/schemadns/bench/internal/server"
	"github.com/schemadns/schemadns/internal/clustershape"
	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The threshold shape (S5): Kubernetes' scalability thresholds as
// internal/clustershape lays them out, loaded once into one API server and
// measured on it twice, both plugins without the pod watch (pods
// disabled), then both with pods verified. Each run is a
// results.ShapeResult of its own, so the tables of every shape have a row
// for each; what only this shape measures (the forced relist, the cluster
// mix on its data) is in its Run.

// podModes are the threshold shape's runs, in order: the pods option of
// both plugins.
var podModes = []string{"disabled", "verified"}

// thresholdData is the threshold shape as loaded: what its runs ask, wait
// for and rewrite.
type thresholdData struct {
	layout *clustershape.Layout
	// clusterIPs are the ClusterIP services with their IPv4 address,
	// v4only those of them with no IPv6 one, headless the headless
	// services (all have endpoints), by number.
	clusterIPs, v4only, headless []querymix.Service
	// endpoints is each headless service's IPv4 endpoints, by name.
	endpoints map[string]int
	lastPod   string       // the DNS name of the pod loaded last
	churner   *churn.Churn // shared by the runs: each goes on from the state the last left
}

// measureThresholds starts the threshold shape's API server (with an audit
// log of lists and watches, which shows stock's relists), loads the shape
// once and measures each run on it; it returns the runs measured.
func (e *env) measureThresholds(ctx context.Context, sh fixture.Shape) ([]*results.ShapeResult, error) {
	l, err := sh.Cluster.Layout()
	if err != nil {
		return nil, err
	}
	logf("%s %s: %s", sh.Name, sh.Title, sh.Describe())
	logFile, err := os.Create(filepath.Join(e.work, sh.Name+"-kubeapi.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	audit := filepath.Join(e.work, sh.Name+"-audit.log")
	flags, err := kubeapi.AuditFlags(e.work, audit, kubeapi.AdminUser)
	if err != nil {
		return nil, err
	}
	// A restart of the API server lists the whole shape from etcd before
	// it is ready: minutes at full size on two cores.
	c, err := kubeapi.Start(ctx, kubeapi.Options{Log: logFile, ReadyTimeout: 15 * time.Minute, APIServerFlags: flags})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	start := time.Now()
	stats, err := clustershape.Load(ctx, c.RESTConfig(), l, clustershape.LoadOptions{Writers: e.cfg.s5Writers,
		Progress: func(p clustershape.Progress) { logf("  loading %s: %s", sh.Name, p) }, ProgressEvery: 30 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	loaded := time.Since(start).Seconds()
	logf("loaded %s in %.0f s (%d writers, %d writes, %d retries)", sh.Name, loaded, e.cfg.s5Writers, stats.Writes, stats.Retries)
	d, err := newThresholdData(ctx, e.cfg, c, l)
	if err != nil {
		return nil, err
	}
	var out []*results.ShapeResult
	for _, pods := range podModes {
		if ctx.Err() != nil {
			break
		}
		sr := &results.ShapeResult{Shape: sh, LoadSeconds: loaded, Memory: map[string]server.Memory{}, FirstAnswer: map[string][]float64{},
			Together: map[string][]float64{},
			Run:      &results.ThresholdRun{Pods: pods, Counts: l.Counts(), Writers: e.cfg.s5Writers, Relist: map[string]*results.RelistResult{}}}
		err := e.thresholdRun(ctx, sr, c, d, audit)
		if len(sr.Memory) > 0 {
			out = append(out, sr)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", sr.Label(), err)
		}
	}
	return out, nil
}

// thresholdRun measures one run on the loaded shape: ours and stock
// started in turn and timed to their first complete answer (the last start
// of each measured), the cluster mix at a fixed load on them and on the
// floor, the churn, then the forced relist of each alone.
func (e *env) thresholdRun(ctx context.Context, sr *results.ShapeResult, c *kubeapi.Cluster, d *thresholdData, audit string) error {
	ours, stock := server.KubeTargets(sr.Run.Pods)
	r := &shapeRun{env: e, sr: sr, cluster: c, servers: map[string]*server.Server{}, ours: ours, stock: stock,
		tag: sr.Shape.Name + "-pods-" + sr.Run.Pods, thr: d, churner: d.churner}
	defer r.stop()
	logf("%s: both plugins with pods %s", sr.Label(), sr.Run.Pods)
	if err := r.timedStarts(ctx); err != nil {
		return err
	}
	for _, t := range []server.Target{ours, stock, server.TargetFloor} {
		e.res.Targets[t.Key] = t.Label
		if err := r.start(ctx, t); err != nil {
			return err
		}
	}
	if err := r.thresholdCPU(ctx); err != nil {
		return err
	}
	r.stop(server.KeyFloor)
	err := r.churn(ctx)
	d.churner = r.churner
	if err != nil {
		return fmt.Errorf("churn: %w", err)
	}
	r.stop()
	for _, t := range []server.Target{ours, stock} {
		rr, err := r.relist(ctx, t, audit)
		if rr != nil {
			sr.Run.Relist[t.Key] = rr
		}
		if err != nil {
			return fmt.Errorf("relist of %s: %w", t.Key, err)
		}
	}
	return nil
}

// newThresholdData reads back what the API server allocated (the services'
// cluster IPs) and makes the runs' probes, mix and churned services.
func newThresholdData(ctx context.Context, cfg *config, c *kubeapi.Cluster, l *clustershape.Layout) (*thresholdData, error) {
	cs, err := fixture.WriterClient(c)
	if err != nil {
		return nil, err
	}
	sel := metav1.ListOptions{LabelSelector: clustershape.LabelShape + "=" + l.Shape().Name}
	list, err := cs.CoreV1().Services("").List(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	ips := map[string][]string{}
	for _, svc := range list.Items {
		ips[svc.Namespace+"/"+svc.Name] = svc.Spec.ClusterIPs
	}
	d := &thresholdData{layout: l, endpoints: map[string]int{}}
	var churned []*churn.Service
	for i := range l.Counts().Services {
		svc := l.Service(i)
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			continue
		}
		var v4 []*discoveryv1.EndpointSlice
		n := 0
		for _, sl := range l.Slices(i) {
			if sl.AddressType == discoveryv1.AddressTypeIPv4 {
				v4, n = append(v4, sl), n+len(sl.Endpoints)
			}
		}
		isHeadless := svc.Spec.ClusterIP == corev1.ClusterIPNone
		ref := querymix.Service{Name: svc.Name, NS: svc.Namespace}
		switch {
		case isHeadless:
			d.headless = append(d.headless, ref)
			d.endpoints[svc.Name] = n
		default:
			got := ips[svc.Namespace+"/"+svc.Name]
			if len(got) == 0 {
				return nil, fmt.Errorf("service %s/%s: not in the API server's list", svc.Namespace, svc.Name)
			}
			ref.IP = got[0]
			d.clusterIPs = append(d.clusterIPs, ref)
			if len(got) == 1 {
				d.v4only = append(d.v4only, ref)
			}
		}
		if n > 0 {
			churned = append(churned, churn.NewService(svc.Namespace, svc.Name, v4, isHeadless))
		}
	}
	if len(d.clusterIPs) == 0 || len(d.v4only) == 0 || len(d.headless) == 0 {
		return nil, fmt.Errorf("shape %s: no ClusterIP, single-stack or headless service to ask", l.Shape().Name)
	}
	if n := l.Counts().Pods; n > 0 {
		p := l.Pod(n - 1)
		d.lastPod = fixture.Dashed(p.Status.PodIP) + "." + p.Namespace + ".pod.cluster.local."
	}
	d.churner = churn.New(cfg.churn, cs, churned)
	return d, nil
}

// probes are the queries whose complete answers show that a server has
// every kind of object: the ClusterIP and the headless service numbered
// last (with all its endpoints), the largest headless service numbered
// last over TCP (its endpoints span slices), and with the pod watch the
// pod loaded last.
func (d *thresholdData) probes(pods string) []server.Sentinel {
	name := func(s querymix.Service) string { return s.Name + "." + s.NS + ".svc.cluster.local." }
	last := d.headless[len(d.headless)-1]
	out := []server.Sentinel{
		{Name: name(d.clusterIPs[len(d.clusterIPs)-1]), Qtype: dns.TypeA, Min: 1},
		{Name: name(last), Qtype: dns.TypeA, Min: d.endpoints[last.Name], TCP: d.endpoints[last.Name] > 20},
	}
	largest := last
	for _, s := range d.headless {
		if d.endpoints[s.Name] >= d.endpoints[largest.Name] {
			largest = s
		}
	}
	if largest != last {
		out = append(out, server.Sentinel{Name: name(largest), Qtype: dns.TypeA, Min: d.endpoints[largest.Name], TCP: true})
	}
	if pods == "verified" && d.lastPod != "" {
		out = append(out, server.Sentinel{Name: d.lastPod, Qtype: dns.TypeA, Min: 1})
	}
	return out
}

// thresholdCPU runs the cluster mix over UDP at a fixed load on ours,
// stock and the floor, as on S3: S3's load when S3 ran before, else -qps,
// else half the slowest target's saturated rate in the first run (the
// second run keeps it), each target saturated once first (the warm-up).
func (r *shapeRun) thresholdCPU(ctx context.Context) error {
	d, run := r.thr, r.sr.Run
	r.files.mix = filepath.Join(r.work, r.tag+"-mix.txt")
	if err := querymix.WriteQueries(r.files.mix, querymix.Generate(querymix.Cluster(d.clusterIPs, d.v4only, d.headless), querymix.Lines)); err != nil {
		return err
	}
	p := &perf.Figures{Rates: map[string]int{}, Calibration: map[string]map[string]float64{}}
	run.CPU = p
	p.CrossCheck = []server.CrossCheck{server.Compare(r.servers[server.KeyOurs], r.servers[server.KeyStock], r.files.mix)}
	logf("answers %s: %d of %d distinct queries differ", p.CrossCheck[0].Pair, p.CrossCheck[0].Differing, p.CrossCheck[0].Compared)
	spec := perf.Spec{File: r.files.mix, Duration: r.cfg.Duration, Clients: 4, Outstanding: 100, Verbose: true}
	pl := perf.Plan{Name: perf.TestMixed, Targets: []*server.Server{r.servers[server.KeyOurs], r.servers[server.KeyStock], r.servers[server.KeyFloor]}, Spec: spec}
	given, from := r.mixLoad()
	if err := perf.Calibrate(ctx, r.cfg.Settings, &pl, given, p); err != nil {
		return err
	}
	if given == 0 {
		r.s5Load, from = pl.Spec.QPS, "half the slowest target's saturated rate in the first S5 run (S3 not measured in this run)"
	}
	run.LoadFrom, run.Command = from, pl.Spec.Command(r.cfg.Settings)
	return perf.RunRounds(ctx, r.cfg.Settings, []perf.Plan{pl}, p)
}

// mixLoad is the fixed load of the threshold shape's cluster mix, and
// where it comes from (0 when it is to be calibrated).
func (r *shapeRun) mixLoad() (int, string) {
	for _, sr := range r.res.Shapes {
		if sr.Perf != nil && sr.Perf.Rates[perf.TestMixed] > 0 {
			return sr.Perf.Rates[perf.TestMixed], fmt.Sprintf("%s's in this run", sr.Shape.Name)
		}
	}
	switch {
	case r.cfg.qps > 0:
		return r.cfg.qps, "-qps"
	case r.s5Load > 0:
		return r.s5Load, "half the slowest target's saturated rate in the first S5 run (S3 not measured in this run)"
	}
	return 0, ""
}
