package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// report collects every assertion and figure of a run, in order, and
// writes them as docs/e2e.md and docs/e2e.json.
type report struct {
	mu sync.Mutex
	// title, command and intro head the page: what made it and what ran.
	title, command, intro string
	// scale is the run's -scale; a run other than the default one puts
	// its section into the default run's page too.
	scale string
	// section renders the part of the page that a run of another scale
	// also puts into the default run's page (summary: that copy), in
	// thresholdsreport.go and disruptions.go; nil for none.
	section func(summary bool) string
	// data, if set, gives the figures of the section for the JSON.
	data    func() any
	Started time.Time `json:"started"`
	Checks  []check   `json:"checks"`
	Figures []figure  `json:"figures"`
	Tables  []table   `json:"tables"`
	Steps   []step    `json:"steps"`
	Data    any       `json:"data,omitempty"`
}

type check struct {
	Section string `json:"section"`
	What    string `json:"what"`
	Pass    bool   `json:"pass"`
	Detail  string `json:"detail,omitempty"`
}

type figure struct {
	What  string `json:"what"`
	Value string `json:"value"`
}

type table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

type step struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

func newReport() *report {
	return &report{title: "A real cluster: what `make e2e` proved", command: "make e2e", intro: clusterDescription + keepUsage,
		scale: scaleDefault, Started: time.Now().UTC()}
}

// assert records a check; detail says what was seen.
func (r *report) assert(section, what string, pass bool, detail string, args ...any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Checks = append(r.Checks, check{section, what, pass, fmt.Sprintf(detail, args...)})
	status := "ok  "
	if !pass {
		status = "FAIL"
	}
	fmt.Printf("  %s %s: %s (%s)\n", status, section, what, fmt.Sprintf(detail, args...))
	return pass
}

// fail records a step that could not finish.
func (r *report) fail(section, err string) { r.assert(section, "completes", false, "%s", err) }

func (r *report) figure(what, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures = append(r.Figures, figure{what, value})
}

func (r *report) table(title string, header []string, rows [][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Tables = append(r.Tables, table{title, header, rows})
}

func (r *report) duration(name string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Steps = append(r.Steps, step{name, d.Seconds()})
}

func (r *report) failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.Checks {
		if !c.Pass {
			n++
		}
	}
	return n
}

func (r *report) failed() bool { return r.failures() > 0 }

// write writes the Markdown report to path and the JSON beside it.
func (r *report) write(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if r.data != nil {
		r.Data = r.data()
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".md")+".json", append(js, '\n'), 0o644); err != nil {
		return err
	}
	// The sections of other scales on the page this run replaces, kept as
	// they are: only a run of that scale writes its own.
	old, _ := os.ReadFile(path)
	return os.WriteFile(path, []byte(r.markdown(carriedSections(string(old)))), 0o644)
}

// splicedRun is a run of another scale whose section the default run's
// page carries, between marks that only that run rewrites.
type splicedRun struct {
	scale, heading string
}

// splicedRuns are the runs whose sections the default run's page carries,
// in the order the page has them.
var splicedRuns = []splicedRun{
	{scaleThresholds, thresholdsHeading},
	{scaleDisruptions, disruptionsHeading},
}

// sectionMarks are the marks around a scale's section of the default
// run's page.
func sectionMarks(scale string) (begin, end string) {
	return "<!-- written by make e2e SCALE=" + scale + ": begin -->", "<!-- written by make e2e SCALE=" + scale + ": end -->"
}

// carriedSections are the marked sections of a page, marks included, one
// per spliced run, each as the page has it or one that says it has not
// been run.
func carriedSections(page string) string {
	var b strings.Builder
	for _, run := range splicedRuns {
		begin, end := sectionMarks(run.scale)
		from, to := strings.Index(page, begin), strings.Index(page, end)
		if from < 0 || to < from {
			fmt.Fprintf(&b, "%s\n%sNot run yet: `make e2e SCALE=%s` writes it here, and the whole run in [e2e-%s.md](e2e-%s.md).\n%s\n",
				begin, run.heading, run.scale, run.scale, run.scale, end)
			continue
		}
		b.WriteString(page[from:to+len(end)] + "\n")
	}
	return b.String()
}

// spliceInto puts this run's section into the page at path, in place of
// the one there, or at its end; the rest of the page is left as it is.
func (r *report) spliceInto(path string) error {
	if r.section == nil {
		return nil
	}
	begin, end := sectionMarks(r.scale)
	r.mu.Lock()
	block := begin + "\n" + r.section(true) + end + "\n"
	r.mu.Unlock()
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("the default run's page: %w", err)
	}
	page := string(b)
	from, to := strings.Index(page, begin), strings.Index(page, end)
	if from < 0 || to < from {
		page = strings.TrimRight(page, "\n") + "\n\n" + block
	} else {
		rest := strings.TrimPrefix(page[to+len(end):], "\n")
		page = page[:from] + block + rest
	}
	return os.WriteFile(path, []byte(page), 0o644)
}

// markdown is the page; carried are the sections kept from the page it
// replaces (those of the other scales, on the default run's page), put
// before the checks.
func (r *report) markdown(carried string) string {
	var b strings.Builder
	passed := len(r.Checks)
	for _, c := range r.Checks {
		if !c.Pass {
			passed--
		}
	}
	fmt.Fprintf(&b, "# %s\n\n", r.title)
	fmt.Fprintf(&b, "Generated by `%s` (test/e2e) on %s, %d cores, %s: **%d of %d checks passed**. ",
		r.command, r.Started.Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOOS+"/"+runtime.GOARCH, passed, len(r.Checks))
	fmt.Fprintf(&b, "Do not edit: run `%s` again.\n\n", r.command)
	b.WriteString(r.intro)
	if r.section != nil {
		b.WriteString("\n" + r.section(false))
	}
	b.WriteString("\n## Figures\n\n| what | value |\n|---|---|\n")
	for _, f := range r.Figures {
		fmt.Fprintf(&b, "| %s | %s |\n", f.What, f.Value)
	}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "\n### %s\n\n| %s |\n|%s\n", t.Title, strings.Join(t.Header, " | "), strings.Repeat("---|", len(t.Header)))
		for _, row := range t.Rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if r.section == nil {
		b.WriteString("\n" + carried)
	}
	b.WriteString("\n## Checks\n\n| section | check | result | seen |\n|---|---|---|---|\n")
	for _, c := range r.Checks {
		res := "pass"
		if !c.Pass {
			res = "**FAIL**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", c.Section, c.What, res, strings.ReplaceAll(c.Detail, "|", "\\|"))
	}
	b.WriteString("\n## Time per step\n\n| step | seconds |\n|---|---|\n")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "| %s | %.0f |\n", s.Name, s.Seconds)
	}
	return b.String()
}

// clusterDescription says what ran, for the report's reader.
const clusterDescription = `## The cluster

One node on this machine, every part real: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, kubelet and kube-proxy (iptables
mode) built at the pinned Kubernetes version (` + "`hack/tools.sh e2e`" + `),
containerd and runc from Debian, the bridge and host-local CNI plugins. The
node lives in a network namespace of its own: node ` + nodeIP + `, pods
` + podCIDR + `, Services ` + serviceCIDR + ` (kube-dns at ` + dnsVIP + `), no
masquerade, no route out; upstream names go to a stub DNS server at
` + stubIP + ` that knows one name, ` + "`www.external.test`" + `. Images are
built here and imported: ours from ` + "`make image`" + `, a pause image,
a glibc client (Debian's libc, getent, dig), a static musl client and
busybox (Debian's busybox-static). The manifests are ` + "`deploy/`" + ` as
shipped, through a kustomization that changes only the image tag and the
kube-dns address (and, for the node-local overlay, that address in its
Corefile). Stock CoreDNS is kubeadm's addon (its Corefile, with the stock
` + "`kubernetes`" + ` plugin) run by the same binary.
`

// keepUsage tells how to keep the cluster for a look around (keep.go), on
// the default run's page.
const keepUsage = `
To look around in the cluster, run ` + "`make e2e E2EFLAGS=-keep`" + ` (or
` + "`E2EFLAGS='-keep -out /tmp/e2e.md'`" + ` to leave this page as it is): the
cluster stays up after the run, even a failed one, every process of it,
pods included, and the run ends by printing its kubeconfig and how to
reach it, through its network namespace:
` + "`nsenter --net=" + netnsPath + " " + stateDir + "/bin/kubectl --kubeconfig " + stateDir + "/kubeapi/kubeconfig get pods -A`" + `.
The processes' PIDs are in ` + "`" + stateDir + "/kept.pids`" + `, their
logs in ` + "`" + stateDir + "/logs`" + `; the stub DNS server stops with the
run. No new run starts while a kept cluster runs: ` + "`make e2e-clean`" + `
(` + "`bin/e2e -clean`" + `) stops it and removes it all, the namespace, the
mounts, the cgroups and the state directory.
`
