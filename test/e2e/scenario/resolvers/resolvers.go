// Package resolvers is the e2e run's check of real resolvers in real pods
// (section 2 of docs/e2e.md): every kind of name resolved with glibc's
// and musl's resolvers and dig, through the kube-dns VIP and the
// resolv.conf kubelet wrote, and the upstream stub asked for the
// external name.
package resolvers

import (
	"context"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/scenario"
)

// Resolvers is the check on a cluster.
type Resolvers struct {
	*scenario.Env
}

// New is the check on env's cluster.
func New(env *scenario.Env) *Resolvers { return &Resolvers{env} }

// Run resolves every kind of name with the resolvers pods use,
// through the kube-dns VIP and the resolv.conf kubelet wrote.
func (r *Resolvers) Run(ctx context.Context) error {
	const section = "2. real resolvers in real pods"
	web, err := r.Cluster.Client().CoreV1().Services(scenario.AppNS).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return err
	}
	db0, err := r.Cluster.Client().CoreV1().Pods(scenario.AppNS).Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		return err
	}
	names := []struct{ name, want string }{
		{"web", web.Spec.ClusterIP},
		{"web.e2e", web.Spec.ClusterIP},
		{"web.e2e.svc.cluster.local", web.Spec.ClusterIP},
		{"db-0.db", db0.Status.PodIP},
		{"db-0.db.e2e.svc.cluster.local", db0.Status.PodIP},
		{"ext", cluster.ExternalAddr},
		{"www.external.test", cluster.ExternalAddr},
	}
	for _, nm := range names {
		out, err := r.Cluster.Exec(ctx, scenario.AppNS, "glibc", "getent", "ahostsv4", nm.name)
		got := scenario.FirstField(out)
		r.Report.Assert(section, "glibc getent "+nm.name, err == nil && got == nm.want, "%s %s", got, scenario.ErrText(err))
		out, err = r.Cluster.Exec(ctx, scenario.AppNS, "glibc-tcp", "getent", "ahostsv4", nm.name)
		got = scenario.FirstField(out)
		r.Report.Assert(section, "glibc over TCP (use-vc) "+nm.name, err == nil && got == nm.want, "%s %s", got, scenario.ErrText(err))
		out, err = r.Cluster.Exec(ctx, scenario.AppNS, "musl", "resolve", "lookup", "-4", nm.name)
		want := nm.name + " " + nm.want
		r.Report.Assert(section, "musl getaddrinfo "+nm.name, err == nil && strings.TrimSpace(out) == want, "%s %s", strings.TrimSpace(out), scenario.ErrText(err))
	}
	asked := r.Stub.Count(cluster.ExternalName)
	r.Report.Assert(section, "the external name was asked of the upstream stub (forward . /etc/resolv.conf)", asked > 0, "%d queries for %s", asked, cluster.ExternalName)
	digs := []struct {
		what string
		args []string
		want string
	}{
		{"SRV", []string{"+short", "SRV", "_http._tcp.web.e2e.svc.cluster.local"}, "0 100 80 web.e2e.svc.cluster.local."},
		{"SRV of a StatefulSet", []string{"+short", "SRV", "_sql._tcp.db.e2e.svc.cluster.local"}, "0 50 5432 db-0.db.e2e.svc.cluster.local.\n0 50 5432 db-1.db.e2e.svc.cluster.local."},
		{"PTR of a ClusterIP", []string{"+short", "-x", web.Spec.ClusterIP}, "web.e2e.svc.cluster.local."},
		{"PTR of a StatefulSet pod", []string{"+short", "-x", db0.Status.PodIP}, "db-0.db.e2e.svc.cluster.local."},
		{"A over TCP", []string{"+short", "+tcp", "web.e2e.svc.cluster.local"}, web.Spec.ClusterIP},
		{"A over UDP", []string{"+short", "+notcp", "web.e2e.svc.cluster.local"}, web.Spec.ClusterIP},
	}
	for _, d := range digs {
		out, err := r.Cluster.Exec(ctx, scenario.AppNS, "glibc", append([]string{"dig"}, d.args...)...)
		got := sortedLines(out)
		r.Report.Assert(section, "dig "+d.what+" (dig "+strings.Join(d.args, " ")+")", err == nil && got == d.want, "%q %s", got, scenario.ErrText(err))
	}
	return nil
}

// sortedLines sorts dig +short's lines (record order varies).
func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
