package thresholds

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/schemadns/schemadns/internal/clustershape"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Heading opens the thresholds section, on both pages.
const Heading = "## The relist at the Kubernetes scalability thresholds (S5)\n\n"

// section is the thresholds run's section: the table of every
// server, and how it was measured. On the default run's page (summary) it
// links the whole run; on the run's own page it adds the details.
func (th *Thresholds) section(summary bool) string {
	t := th.thr
	var b strings.Builder
	b.WriteString(Heading)
	if summary {
		fmt.Fprintf(&b, "From `make e2e SCALE=thresholds` on %s (the whole run, its checks and details: [e2e-thresholds.md](e2e-thresholds.md)).\n\n",
			th.Report.Started.Format("2006-01-02 15:04 UTC"))
	}
	if th.scale != 1 {
		fmt.Fprintf(&b, "**At %g × S5 (-thresholds-scale), not at the thresholds.**\n\n", th.scale)
	}
	c := t.layout.Counts()
	fmt.Fprintf(&b, "The shape (package internal/clustershape, which make bench loads too): %s. "+
		"Every pod's schedulerName is served by no scheduler and its addresses were written through the status subresource; "+
		"the addresses are data only (100.64.0.0/10, fd00:100:64::/48), and the services carry a service-proxy-name so that kube-proxy programs none of them. "+
		"Loaded once for every server: %s services, slices and pods in %.0f s (%s writes with the pods' status, %d retried); "+
		"the API server's RSS then %s, etcd's %s.\n\n",
		t.layout.Describe(), commas(c.Services+c.Slices+c.Pods), t.load.Elapsed.Seconds(), commas(t.load.Writes), t.load.Retries, gib(t.apiRSS), gib(t.etcdRSS))
	b.WriteString(relistMethod)
	b.WriteString("\n| server | limit | steady cgroup memory | peak cgroup memory | peak / steady | OOM kills | restarts | failed lookups during the relist | lookups > 1 s | relisted, per resource |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range t.results {
		kills, restarts := r.totals()
		failed, slow := fmt.Sprint(r.client.Fail), fmt.Sprint(r.client.Slow)
		if r.notReady != "" {
			failed, slow = "–", "–"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %s | %s | %s |\n", r.server.name, r.limit, r.steadies(), r.peaks(), r.ratios(),
			kills, restarts, failed, slow, strings.ReplaceAll(r.relistSummary(), "|", "\\|"))
	}
	b.WriteString("\n" + relistNotes + "\n")
	b.WriteString(th.verdicts())
	if !summary {
		b.WriteString(th.relistDetails())
	}
	return b.String()
}

// relistMethod says how each server was measured.
const relistMethod = `Each server alone in the cluster, with the two replicas its manifest has,
applied as an operator would (ours through kustomize, the limit as a
patch; stock as kubeadm's manifests), while a glibc client pod resolves
four names of the shape through the kube-dns VIP, 150 lookups a second.
Once every replica answered S5's last service and last pod, and after
30 s of steady lookups, the memory was read and the peaks reset; then the
relist was forced: the API server stopped, etcd compacted past every
revision a client had seen (two writes, then a compaction at the last),
the API server started again. Its watch cache then begins at a revision
later than any informer's, so every resumed watch is answered 410 Gone and
every informer lists again. Each list was checked per replica and per
resource in the API server's audit log (the DNS servers' lists and
watches, by source address), and for ours by its
coredns_watchcache_relists_total too; 60 s after the last, the peak was
read.
`

// relistNotes say what the figures are.
const relistNotes = `Steady: the container's memory cgroup usage (memory.usage_in_bytes)
before the outage; peak: its memory.max_usage_in_bytes since then (the
pod's cgroup when the container was replaced), the figure the limit is
enforced on; one figure per replica. OOM kills: containerd's OOM events
for the server's containers from its apply on; restarts: kubelet's
restart count over the same time. Lookups: the client's, from the API
server's stop until the peak was read.
`

// verdicts state the bar and the comparison with the upstream case.
func (th *Thresholds) verdicts() string {
	var b strings.Builder
	for _, r := range th.thr.results {
		kills, restarts := r.totals()
		switch {
		case r.server.ours() && r.server.limit != "":
			met := r.notReady == "" && kills == 0 && restarts == 0
			fmt.Fprintf(&b, "- Bar, %s: not OOM-killed at %s: **%s** (%d OOM kills, %d restarts, peak %s).\n",
				r.server.name, r.limit, metText(met), kills, restarts, r.peaks())
		case !r.server.ours() && r.notReady != "":
			fmt.Fprintf(&b, "- Stock at %s never served S5: %s. It failed before any relist: worse than the upstream case "+
				"(kubernetes/kubernetes#139117: 233 of 313 CoreDNS pods OOM-killed at 170Mi when the API server restarted at 5,000 nodes).\n",
				r.limit, r.notReady)
		case !r.server.ours() && kills > 0:
			fmt.Fprintf(&b, "- Stock at %s was OOM-killed %d times (%d restarts) through the relist: the upstream case reproduced "+
				"(kubernetes/kubernetes#139117: 233 of 313 CoreDNS pods OOM-killed at 170Mi when the API server restarted at 5,000 nodes), "+
				"its peak %s against a steady %s.\n", r.limit, kills, restarts, r.peaks(), r.steadies())
		case !r.server.ours():
			fmt.Fprintf(&b, "- Stock at %s was not OOM-killed here (peak %s): the upstream case "+
				"(kubernetes/kubernetes#139117) was not reproduced at this shape on this cluster.\n", r.limit, r.peaks())
		}
	}
	return b.String()
}

func metText(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// relistDetails are the per-pod figures and the timeline of each server.
func (th *Thresholds) relistDetails() string {
	var b strings.Builder
	b.WriteString("\n### Per replica\n\n| server | pod | steady cgroup | steady RSS | peak cgroup | OOM kills | restarts | listed again |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range th.thr.results {
		for _, p := range r.pods {
			peak := scenario.MiB(p.peak)
			if p.peakFromPod {
				peak += " (pod cgroup)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d | %s |\n", r.server.name, p.name, mibOr(p.steady), mibOr(p.rss), peak,
				p.oomKills, p.restarts, pairs(p.relisted))
		}
	}
	b.WriteString("\n### Timeline\n\n| server | serving S5 after the apply | API server stopped to ready again | every informer listed after | API server peak RSS after the restart | lookups during the relist | max ms |\n|---|---|---|---|---|---|---|\n")
	for _, r := range th.thr.results {
		if r.notReady != "" {
			fmt.Fprintf(&b, "| %s | never: %s | – | – | – | – | – |\n", r.server.name, r.notReady)
			continue
		}
		relisted := "not within " + relistTimeout.String()
		if r.relisted > 0 {
			relisted = fmt.Sprintf("%.0f s", r.relisted.Seconds())
		}
		fmt.Fprintf(&b, "| %s | %.0f s | %.0f s | %s | %s | %d | %d |\n", r.server.name, r.synced.Seconds(), r.outage.Seconds(), relisted,
			gib(r.apiPeak), r.client.OK+r.client.Fail, r.client.MaxMs)
	}
	return b.String()
}

// steadies, peaks and ratios are a figure per replica, joined.
func (r *relistResult) steadies() string {
	return r.each(func(p *dnsPodMem) string { return mibOr(p.steady) })
}

func (r *relistResult) peaks() string {
	return r.each(func(p *dnsPodMem) string { return mibOr(p.peak) })
}

func (r *relistResult) ratios() string {
	return r.each(func(p *dnsPodMem) string {
		if p.steady == 0 || p.peak == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f", float64(p.peak)/float64(p.steady))
	})
}

func (r *relistResult) each(f func(*dnsPodMem) string) string {
	if len(r.pods) == 0 {
		return "–"
	}
	parts := make([]string, len(r.pods))
	for i, p := range r.pods {
		parts[i] = f(p)
	}
	return strings.Join(parts, " / ")
}

// relistSummary is, per resource, whether every replica listed it again
// and how that was seen.
func (r *relistResult) relistSummary() string {
	if r.notReady != "" {
		return "– (never served S5)"
	}
	var parts []string
	how := map[string]bool{}
	for _, res := range r.server.informers {
		var missing []string
		for _, p := range r.pods {
			if p.relisted[res] == "" {
				missing = append(missing, p.name)
			} else {
				how[p.relisted[res]] = true
			}
		}
		if len(missing) == 0 {
			parts = append(parts, res+" ✓")
		} else {
			parts = append(parts, res+" ✗ ("+strings.Join(missing, ", ")+")")
		}
	}
	out := strings.Join(parts, ", ")
	if len(how) > 0 {
		ways := slices.Sorted(maps.Keys(how))
		out += " (seen by: " + strings.Join(ways, "; ") + ")"
	}
	return out
}

func mibOr(b int64) string {
	if b == 0 {
		return "–"
	}
	return scenario.MiB(b)
}

// pairs writes a map as "k: v" pairs in key order.
func pairs(m map[string]string) string {
	if len(m) == 0 {
		return "–"
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, k+": "+m[k])
	}
	return strings.Join(out, ", ")
}

// relistData are a thresholds run's figures, for the JSON beside its page.
type relistData struct {
	Shape        string              `json:"shape"`
	Scale        float64             `json:"scale"`
	Counts       clustershape.Counts `json:"counts"`
	LoadSeconds  float64             `json:"load_seconds"`
	Writes       int                 `json:"writes"`
	Retries      int                 `json:"retries"`
	APIServerRSS int64               `json:"apiserver_rss_bytes"`
	EtcdRSS      int64               `json:"etcd_rss_bytes"`
	Servers      []relistServerData  `json:"servers"`
}

type relistServerData struct {
	Name             string          `json:"name"`
	Limit            string          `json:"limit"`
	Informers        []string        `json:"informers"`
	NotReady         string          `json:"not_ready,omitempty"`
	SyncedSeconds    float64         `json:"synced_seconds"`
	OutageSeconds    float64         `json:"outage_seconds"`
	RelistedSeconds  float64         `json:"relisted_seconds"`
	APIServerPeakRSS int64           `json:"apiserver_peak_rss_bytes"`
	Lookups          int             `json:"lookups"`
	FailedLookups    int             `json:"failed_lookups"`
	SlowLookups      int             `json:"lookups_over_1s"`
	Pods             []relistPodData `json:"pods"`
}

type relistPodData struct {
	Name        string            `json:"name"`
	Steady      int64             `json:"steady_bytes"`
	RSS         int64             `json:"rss_bytes"`
	Peak        int64             `json:"peak_bytes"`
	PeakFromPod bool              `json:"peak_from_pod_cgroup,omitempty"`
	OOMKills    int               `json:"oom_kills"`
	Restarts    int               `json:"restarts"`
	Relisted    map[string]string `json:"relisted"`
}

// data are the run's figures as relistData.
func (t *thresholdsRun) data(scale float64) any {
	d := relistData{Shape: t.layout.Describe(), Scale: scale, Counts: t.layout.Counts(), LoadSeconds: t.load.Elapsed.Seconds(),
		Writes: t.load.Writes, Retries: t.load.Retries, APIServerRSS: t.apiRSS, EtcdRSS: t.etcdRSS}
	for _, r := range t.results {
		s := relistServerData{Name: r.server.name, Limit: r.limit, Informers: r.server.informers, NotReady: r.notReady,
			SyncedSeconds: r.synced.Seconds(), OutageSeconds: r.outage.Seconds(), RelistedSeconds: r.relisted.Seconds(),
			APIServerPeakRSS: r.apiPeak, Lookups: r.client.OK + r.client.Fail, FailedLookups: r.client.Fail, SlowLookups: r.client.Slow}
		for _, p := range r.pods {
			s.Pods = append(s.Pods, relistPodData{Name: p.name, Steady: p.steady, RSS: p.rss, Peak: p.peak, PeakFromPod: p.peakFromPod,
				OOMKills: p.oomKills, Restarts: p.restarts, Relisted: p.relisted})
		}
		d.Servers = append(d.Servers, s)
	}
	return d
}
