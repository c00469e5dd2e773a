package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

// The monitoring component, deploy/components/monitoring, proven: the
// alerts and every dashboard query parse (promtool check rules); each alert
// fires on series that should fire it and stays silent on healthy ones
// (promtool test rules, tests/alerts.yaml); every metric they name is
// exported by the running server (monitoring_metrics_test.go); the
// component renders over the base and the API server accepts it
// (monitoring_deploy_test.go); docs/operations.md lists exactly its alerts
// and panels (monitoring_docs_test.go).

// monitoringDir is the component, from the test's package directory.
var monitoringDir = filepath.Join("..", "deploy", "components", "monitoring")

// alertRule is one rule of a PrometheusRule's groups, as promtool reads it.
type alertRule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ruleGroup struct {
	Name  string      `json:"name"`
	Rules []alertRule `json:"rules"`
}

// prometheusRule is the component's PrometheusRule: its rules, and its
// spec as written, which is a Prometheus rules file (groups:).
type prometheusRule struct {
	groups []ruleGroup
	spec   []byte
}

func readPrometheusRule(t *testing.T) prometheusRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Kind string         `json:"kind"`
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if raw.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml holds a %s", raw.Kind)
	}
	spec, err := yaml.Marshal(raw.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var typed struct {
		Groups []ruleGroup `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(spec, &typed); err != nil {
		t.Fatalf("prometheusrule.yaml spec: %v", err)
	}
	return prometheusRule{groups: typed.Groups, spec: spec}
}

// alerts are the alerting rules of every group.
func (p prometheusRule) alerts() []alertRule {
	var out []alertRule
	for _, g := range p.groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, r)
			}
		}
	}
	return out
}

var (
	promtoolOnce sync.Once
	promtoolBin  string
	promtoolErr  error
)

// promtoolPath is the promtool pinned in hack/tools/promtool, built into
// the tools cache the first time (hack/tools.sh promtool prints its path
// last).
func promtoolPath(t *testing.T) string {
	t.Helper()
	promtoolOnce.Do(func() {
		root, err := kubeapi.RepoRoot()
		if err != nil {
			promtoolErr = err
			return
		}
		cmd := exec.Command("bash", filepath.Join(root, "hack", "tools.sh"), "promtool")
		cmd.Dir = root
		// The first build takes minutes: show its progress.
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			promtoolErr = err
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		promtoolBin = lines[len(lines)-1]
	})
	if promtoolErr != nil {
		t.Fatalf("hack/tools.sh promtool: %v", promtoolErr)
	}
	return promtoolBin
}

// runPromtool runs promtool with args in dir and returns its output; it
// fails the test when promtool fails.
func runPromtool(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtoolPath(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMonitoringAlerts: the PrometheusRule's groups are a valid rules file
// (promtool check rules, lint warnings fatal); every alert has a `for`, a
// severity and a summary and description; and the unit tests of
// tests/alerts.yaml pass (promtool test rules), with, for every alert, a
// case where it fires and one where it stays silent.
func TestMonitoringAlerts(t *testing.T) {
	pr := readPrometheusRule(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), pr.spec, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "--lint-fatal", "rules.yaml")

	alerts := pr.alerts()
	if len(alerts) == 0 {
		t.Fatal("the PrometheusRule has no alerts")
	}
	for _, a := range alerts {
		if a.For == "" {
			t.Errorf("%s has no for: one bad scrape would page", a.Alert)
		}
		if s := a.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s has severity %q, want critical or warning", a.Alert, s)
		}
		if a.Annotations["summary"] == "" || a.Annotations["description"] == "" {
			t.Errorf("%s lacks a summary or a description", a.Alert)
		}
	}

	unitTests, err := os.ReadFile(filepath.Join(monitoringDir, "tests", "alerts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkAlertCoverage(t, alerts, unitTests)
	if err := os.WriteFile(filepath.Join(dir, "alerts.yaml"), unitTests, 0o644); err != nil {
		t.Fatal(err)
	}
	out := runPromtool(t, dir, "test", "rules", "alerts.yaml")
	t.Logf("promtool test rules:\n%s", out)
}

// checkAlertCoverage: the unit tests have, for each alert, an evaluation
// that expects it to fire and one that expects it silent, and name no
// alert that does not exist.
func checkAlertCoverage(t *testing.T, alerts []alertRule, unitTests []byte) {
	t.Helper()
	var file struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name          string `json:"name"`
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(unitTests, &file); err != nil {
		t.Fatalf("tests/alerts.yaml: %v", err)
	}
	if !slices.Equal(file.RuleFiles, []string{"rules.yaml"}) {
		t.Errorf("tests/alerts.yaml reads %v, want [rules.yaml] (the test writes the PrometheusRule's spec there)", file.RuleFiles)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range file.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				silent[at.Alertname] = true
			}
		}
	}
	known := map[string]bool{}
	for _, a := range alerts {
		known[a.Alert] = true
		if !fires[a.Alert] {
			t.Errorf("tests/alerts.yaml never expects %s to fire", a.Alert)
		}
		if !silent[a.Alert] {
			t.Errorf("tests/alerts.yaml never expects %s to stay silent", a.Alert)
		}
	}
	for name := range fires {
		if !known[name] {
			t.Errorf("tests/alerts.yaml tests %s, which the PrometheusRule does not have", name)
		}
	}
}

// dashboard is the part of the Grafana dashboard the tests read.
type dashboard struct {
	UID        string           `json:"uid"`
	Title      string           `json:"title"`
	Panels     []dashboardPanel `json:"panels"`
	Templating struct {
		List []dashboardVar `json:"list"`
	} `json:"templating"`
}

type dashboardPanel struct {
	ID          int              `json:"id"`
	Type        string           `json:"type"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Datasource  *datasourceRef   `json:"datasource"`
	Panels      []dashboardPanel `json:"panels"` // a collapsed row's
	Targets     []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource *datasourceRef `json:"datasource"`
	} `json:"targets"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type dashboardVar struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Query      any    `json:"query"`
	Definition string `json:"definition"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

func readDashboard(t *testing.T) ([]byte, dashboard) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	return data, d
}

// allPanels are the dashboard's panels, those of collapsed rows included,
// rows left out.
func (d dashboard) allPanels() []dashboardPanel {
	var out []dashboardPanel
	var walk func([]dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// dashboardQuery is one PromQL expression of the dashboard, with where it
// is.
type dashboardQuery struct {
	where, expr string
}

// dashboardVariables are what the dashboard's expressions may refer to,
// each with the value the tests put in its place: Grafana's rate interval
// and the job variable (default kube-dns, the PodMonitor's job).
var dashboardVariables = map[string]string{
	"$__rate_interval": "5m",
	"$job":             "kube-dns",
}

// queries are the dashboard's PromQL expressions with its variables
// replaced, and the metrics its label_values variables read.
func (d dashboard) queries(t *testing.T) (exprs []dashboardQuery, varMetrics []string) {
	t.Helper()
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			expr := tg.Expr
			for v, val := range dashboardVariables {
				expr = strings.ReplaceAll(expr, v, val)
			}
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q target %s: a variable the tests do not know in %s", p.Title, tg.RefID, tg.Expr)
			}
			exprs = append(exprs, dashboardQuery{where: p.Title + " " + tg.RefID, expr: expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(METRIC, LABEL)", v.Name, v.Definition)
			continue
		}
		varMetrics = append(varMetrics, m[1])
	}
	return exprs, varMetrics
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)$`)

// TestMonitoringDashboard: the dashboard is what Grafana's sidecar can
// load (a uid, panels with unique ids, every query on the datasource
// variable), and every expression of every panel parses as PromQL: each
// goes into a rules file as a recording rule, and promtool check rules
// reads it.
func TestMonitoringDashboard(t *testing.T) {
	_, d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("the dashboard has uid %q, title %q: both are needed", d.UID, d.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Name == "job" && v.Current.Value != dashboardVariables["$job"] {
			t.Errorf("the job variable's default is %v, want %s (the PodMonitor's job)", v.Current.Value, dashboardVariables["$job"])
		}
	}
	if !vars["datasource"] || !vars["job"] {
		t.Errorf("the dashboard's variables are %v, want datasource and job", vars)
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
	}
	for _, p := range d.allPanels() {
		if p.Description == "" {
			t.Errorf("panel %q has no description", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: target %q with expression %q", p.Title, tg.RefID, tg.Expr)
			}
			refs[tg.RefID] = true
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s: datasource %+v, want the datasource variable", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}

	exprs, _ := d.queries(t)
	rules := ruleGroup{Name: "dashboard"}
	for i, q := range exprs {
		rules.Rules = append(rules.Rules, alertRule{Record: fmt.Sprintf("dashboard:query%03d", i), Expr: q.expr})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []ruleGroup{rules}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard-rules.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A parse error names the rule: dashboard:queryNNN is exprs[NNN].
	cmd := exec.Command(promtoolPath(t), "check", "rules", "dashboard-rules.yaml")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		for i, q := range exprs {
			t.Logf("dashboard:query%03d = %s: %s", i, q.where, q.expr)
		}
		t.Fatalf("promtool check rules on the dashboard's queries: %v\n%s", err, out)
	}
	t.Logf("%d dashboard queries parse", len(exprs))
}

// promqlToken is an identifier, a number or a duration of PromQL.
var promqlToken = regexp.MustCompile(`[0-9][0-9.]*(?:[eE][+-]?[0-9]+)?[a-z]*|[a-zA-Z_:][a-zA-Z0-9_:]*`)

// promqlKeywords are PromQL's words that are neither metrics nor
// functions.
var promqlKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true, "inf": true, "nan": true,
}

var (
	promqlString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
)

// metricNames are the metric names an expression reads: what is left of
// it, once strings, label matchers, ranges and grouping label lists are
// taken out, that is not a number, a keyword or a function (a word
// followed by a parenthesis). It is a scanner, not a parser: enough for
// expressions that promtool has parsed, and it errs by finding too much
// (a word it does not understand counts as a metric and then must exist),
// never too little.
func metricNames(expr string) []string {
	s := promqlString.ReplaceAllString(expr, " ")
	s = promqlMatchers.ReplaceAllString(s, " ")
	s = promqlRange.ReplaceAllString(s, " ")
	s = promqlGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range promqlToken.FindAllStringIndex(s, -1) {
		word := s[loc[0]:loc[1]]
		if word[0] >= '0' && word[0] <= '9' || promqlKeywords[strings.ToLower(word)] {
			continue
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue
		}
		if !slices.Contains(out, word) {
			out = append(out, word)
		}
	}
	return out
}

// TestMetricNames checks the scanner on expressions of the shapes the
// rules and the dashboard use.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`max by (resource, verb) (coredns_watchcache_permission_denied) == 1`:                                                         {"coredns_watchcache_permission_denied"},
		`histogram_quantile(0.99, sum by (le) (rate(coredns_dns_programming_duration_seconds_bucket{plugin="kubeschema"}[10m]))) > 1`: {"coredns_dns_programming_duration_seconds_bucket"},
		`sum(rate(a_total{rcode="SERVFAIL"}[5m])) / sum(rate(b_total[5m])) > 0.01`:                                                    {"a_total", "b_total"},
		"(\n  min by (pod) (x) == 0\n  and on (pod) max by (pod) (y{name=\"by (z)\"}) == 1\n)\nor\nw":                                 {"x", "y", "w"},
		`sum without (pod) (rate(c[1m] offset 5m)) * 1e3`:                                                                             {"c"},
	} {
		if got := metricNames(expr); !slices.Equal(got, want) {
			t.Errorf("metricNames(%q) = %v, want %v", expr, got, want)
		}
	}
}

// monitoringMetrics are the metric names the rules and the dashboard
// read, each with where it is read.
func monitoringMetrics(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, a := range readPrometheusRule(t).alerts() {
		for _, m := range metricNames(a.Expr) {
			out[m] = append(out[m], "alert "+a.Alert)
		}
	}
	_, d := readDashboard(t)
	exprs, varMetrics := d.queries(t)
	for _, q := range exprs {
		for _, m := range metricNames(q.expr) {
			out[m] = append(out[m], "panel "+q.where)
		}
	}
	for _, m := range varMetrics {
		out[m] = append(out[m], "dashboard variable")
	}
	return out
}
