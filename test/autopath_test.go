package test

import (
	"bufio"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/schemadns/schemadns/plugin/pkg/searchpath"
	"github.com/schemadns/schemadns/test/kubeapi"
)

// apLookup is one name a pod looks up, and what glibc must return.
type apLookup struct {
	name      string
	addrs     []string // nil: not found
	canonical string
}

// apCount is what one lookup cost, in queries each server received.
type apCount struct {
	client   int // from the pod to the server in its resolv.conf
	search   int // of those, in the autopath zone (node-local only)
	cluster  int // received by the cluster DNS (from the pod or the node-local)
	external int // received by the external resolver
	types    int // address types the pod asked for
}

// TestAutopathGlibc resolves names with the real glibc resolver
// (getaddrinfo through getent ahosts, in a mount namespace with its own
// resolv.conf) three ways, and counts the queries each server received:
//
//   - node-local: the pod searches search.default.cluster.local.ap.k8s.io
//     and asks the node-local cache (gensearchpath), which asks the cluster
//     DNS (edns0autopath) with the SearchPaths option;
//   - cluster-only: the same pod asks the cluster DNS directly, which
//     derives the paths from the name;
//   - classic: a ClusterFirst pod's five search domains, against the
//     cluster DNS.
//
// Autopath costs the pod one query per address type where the classic
// search path costs up to six per type; the answers are the same. It also
// checks that stubResolver (the benchmark's client) sends exactly what
// glibc sends.
func TestAutopathGlibc(t *testing.T) {
	e := newApEnv(t, apOptions{})
	lookups := []apLookup{
		{apShortSvc, []string{e.webIP}, apShortSvc + "." + apNamespace + ".svc." + apCluster},
		{apOtherSvc + "." + apOtherNS, []string{e.dbIP}, apOtherSvc + "." + apOtherNS + ".svc." + apCluster},
		{apExternal, []string{apExternal4, apExternal6}, apExternal},
		{apMissing, nil, ""},
	}
	autopath := strings.Join(apAutopathSearch, " ")
	classic := strings.Join(apClassicSearch, " ")
	modes := []struct {
		name, server, search string
		options              []string
	}{
		{"node-local", e.node, autopath, nil},
		{"cluster-only", e.cluster, autopath, nil},
		{"classic", e.cluster, classic, nil},
	}
	counts := map[string]map[string]apCount{}
	for _, mode := range modes {
		counts[mode.name] = map[string]apCount{}
		for _, l := range lookups {
			rc := apResolvConf(mode.server, mode.search, mode.options...)
			c := e.glibcCounted(t, rc, l)
			counts[mode.name][l.name] = c
			t.Logf("%-12s %-16s pod→server %2d (autopath zone %d)  cluster DNS %2d  external %d",
				mode.name, l.name, c.client, c.search, c.cluster, c.external)
			// glibc may add a query (see below), so the model gives a lower
			// bound.
			e.sameAsModel(t, mode.server, strings.Fields(mode.search), l, c, false)
		}
	}

	types := counts["classic"][apShortSvc].types
	for _, l := range lookups {
		nl, co, cl := counts["node-local"][l.name], counts["cluster-only"][l.name], counts["classic"][l.name]
		// The pod's search domain costs one query per type, whatever the name.
		if nl.search != types || nl.cluster > types {
			t.Errorf("node-local %s: %d queries in the search domain, %d to the cluster DNS; want %d and at most %d", l.name, nl.search, nl.cluster, types, types)
		}
		// Found names end there; a missing one is also tried as it is by
		// glibc (res_search always does, after the search list).
		want := types
		if l.addrs == nil {
			want = 2 * types
		}
		// glibc sends A and AAAA in parallel; when the AAAA answer is
		// NODATA behind a CNAME (an IPv4-only service) it sometimes, by
		// the order the replies arrive, asks once more for the name as
		// given. That query is glibc's, outside the search domain (whose
		// count is exact above), so one extra is tolerated and logged.
		for _, got := range []struct {
			where string
			n     int
		}{{"node-local", nl.client}, {"cluster DNS", co.client}} {
			switch {
			case got.n == want+1 && l.addrs != nil:
				t.Logf("%s via %s: %d queries, glibc retried the name as given once", l.name, got.where, got.n)
			case got.n != want:
				t.Errorf("%s: the pod sent %d queries to the %s, want %d", l.name, got.n, got.where, want)
			}
		}
		if cl.client < nl.client {
			t.Errorf("%s: classic %d queries, fewer than autopath's %d", l.name, cl.client, nl.client)
		}
	}
	for name, domains := range map[string]int{apShortSvc: 1, apOtherSvc + "." + apOtherNS: 2, apExternal: 6, apMissing: 6} {
		got := counts["classic"][name].client
		if got < domains*types {
			t.Errorf("classic %s: %d queries, want at least %d (%d candidates × %d types)", name, got, domains*types, domains, types)
		}
		if got > domains*types {
			t.Logf("classic %s: %d queries, %d more than the %d candidates × %d types (glibc resent)", name, got, got-domains*types, domains, types)
		}
	}
	if types != 2 {
		t.Logf("glibc asked for %d address type(s): AI_ADDRCONFIG found no IPv6 address on this host", types)
	}

	// With no-tld-query the pod does not try a dotless name as it is,
	// which the servers have already done for it: one query per type.
	other := apLookup{name: apMissing + "2"}
	c := e.glibcCounted(t, apResolvConf(e.node, autopath, "no-tld-query"), other)
	if c.client != types {
		t.Errorf("node-local, no-tld-query, %s: %d queries, want %d", other.name, c.client, types)
	}
}

// glibcCounted runs one glibc lookup, checks its answer, and counts the
// queries each server received for it.
func (e *apEnv) glibcCounted(t *testing.T, rc string, l apLookup) apCount {
	t.Helper()
	before := e.snapshot(t)
	res := glibcLookup(t, rc, l.name)
	after := e.settled(t)
	if res.found != (l.addrs != nil) {
		t.Errorf("%s with\n%s: found %v, want %v", l.name, rc, res.found, l.addrs != nil)
	} else if res.found {
		got, want := slices.Sorted(slices.Values(res.addrs)), slices.Sorted(slices.Values(l.addrs))
		if !slices.Equal(got, want) || res.canonical != l.canonical {
			t.Errorf("%s with\n%s: %v (%s), want %v (%s)", l.name, rc, got, res.canonical, want, l.canonical)
		}
	}
	server := e.node
	if strings.Contains(rc, "nameserver "+e.cluster+"\n") {
		server = e.cluster
	}
	c := apCount{
		client:   apTotal(after.byServer[server]) - apTotal(before.byServer[server]),
		cluster:  apTotal(after.byServer[e.cluster]) - apTotal(before.byServer[e.cluster]),
		external: after.external - before.external,
	}
	if server == e.node {
		c.search = apTotal(after.search) - apTotal(before.search)
	}
	for typ, n := range after.byServer[server] {
		if n > before.byServer[server][typ] {
			c.types++
		}
	}
	return c
}

// apSnapshot is every counter at one moment.
type apSnapshot struct {
	byServer map[string]map[string]int // server address → type → queries
	search   map[string]int            // node-local, autopath zone
	external int
}

func (e *apEnv) snapshot(t *testing.T) apSnapshot {
	return apSnapshot{
		byServer: map[string]map[string]int{e.node: apRequests(t, e.node, ""), e.cluster: apRequests(t, e.cluster, "")},
		search:   apRequests(t, e.node, apSuffix+"."),
		external: e.external.count(),
	}
}

// settled is a snapshot once the counters stop moving: a server counts a
// query just after it writes the reply, so the client may be done first.
func (e *apEnv) settled(t *testing.T) apSnapshot {
	last := e.snapshot(t)
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		now := e.snapshot(t)
		if apSame(now, last) {
			return now
		}
		last = now
	}
	return last
}

func apSame(a, b apSnapshot) bool {
	for s, m := range a.byServer {
		if apTotal(m) != apTotal(b.byServer[s]) {
			return false
		}
	}
	return apTotal(a.search) == apTotal(b.search) && a.external == b.external
}

// sameAsModel checks that stubResolver, with the same settings, sends the
// queries glibc sent.
func (e *apEnv) sameAsModel(t *testing.T, server string, search []string, l apLookup, c apCount, exact bool) {
	t.Helper()
	qtypes := []uint16{dns.TypeA, dns.TypeAAAA}[:c.types]
	found, n, err := newStubResolver(server+":53", search, qtypes...).lookup(l.name)
	if err != nil || found != (l.addrs != nil) || n > c.client || (exact && n != c.client) {
		t.Errorf("stubResolver %s: found %v with %d queries (%v); glibc sent %d", l.name, found, n, err, c.client)
	}
}

// TestAutopathAnswers checks the answers on the wire, over UDP and TCP: a
// CNAME from the client's name to the name found ahead of its records, the
// client's question, and never the SearchPaths option in a reply, even to
// a client that sent it.
func TestAutopathAnswers(t *testing.T) {
	e := newApEnv(t, apOptions{})
	search := "." + apAutopathSearch[0] + "."
	web := apShortSvc + "." + apNamespace + ".svc." + apCluster + "."
	paths := strings.Join(append([]string{apNamespace + ".svc." + apCluster}, "svc."+apCluster, apCluster), ",")
	for _, network := range []string{"udp", "tcp"} {
		cases := []struct {
			server, name string
			option       string // the SearchPaths option sent; "" none
			rcode        int
			answer       []string // owner → target/address, in order
		}{
			{e.node, apShortSvc + search, "", dns.RcodeSuccess,
				[]string{apShortSvc + search + " CNAME " + web, web + " A " + e.webIP}},
			{e.node, apExternal + search, "", dns.RcodeSuccess,
				[]string{apExternal + search + " CNAME " + apExternal + ".", apExternal + ". A " + apExternal4}},
			{e.node, apMissing + search, "", dns.RcodeNameError, nil},
			{e.cluster, apShortSvc + ".", paths, dns.RcodeSuccess,
				[]string{apShortSvc + ". CNAME " + web, web + " A " + e.webIP}},
			{e.cluster, apShortSvc + search, "", dns.RcodeSuccess,
				[]string{apShortSvc + search + " CNAME " + web, web + " A " + e.webIP}},
			{e.cluster, apExternal + search, "", dns.RcodeSuccess,
				[]string{apExternal + search + " CNAME " + apExternal + ".", apExternal + ". A " + apExternal4}},
			{e.cluster, apShortSvc + ".", "a,b,c,d,e,f,g,h,i", dns.RcodeFormatError, nil}, // over max_search_paths
			{e.cluster, apShortSvc + ".", "bad..path", dns.RcodeFormatError, nil},
		}
		for _, tc := range cases {
			m := new(dns.Msg)
			m.SetQuestion(tc.name, dns.TypeA)
			m.SetEdns0(1232, false)
			if tc.option != "" {
				searchpath.Attach(m, searchpath.DefaultCode, []byte(tc.option), 1232)
			}
			r, _, err := (&dns.Client{Net: network, Timeout: 5 * time.Second}).Exchange(m, tc.server+":53")
			if err != nil {
				t.Fatalf("%s %s: %v", network, tc.name, err)
			}
			var got []string
			for _, rr := range r.Answer {
				switch rr := rr.(type) {
				case *dns.CNAME:
					got = append(got, rr.Hdr.Name+" CNAME "+rr.Target)
				case *dns.A:
					got = append(got, rr.Hdr.Name+" A "+rr.A.String())
				}
			}
			if r.Rcode != tc.rcode || !slices.Equal(got, tc.answer) || r.Question[0].Name != tc.name {
				t.Errorf("%s %s (option %q): %s %q question %s; want %s %q", network, tc.name, tc.option,
					dns.RcodeToString[r.Rcode], got, r.Question[0].Name, dns.RcodeToString[tc.rcode], tc.answer)
			}
			if _, found, _ := searchpath.Find(r, searchpath.DefaultCode); found {
				t.Errorf("%s %s: the reply echoes the SearchPaths option", network, tc.name)
			}
		}
	}
}

// TestAutopathPodManifest creates examples/autopath-pod.yaml through the
// real API server with strict field validation, the way kubectl would, and
// checks that the pod's DNS settings are those the plugins expect; and
// that the edns0autopath README shows the same manifest.
func TestAutopathPodManifest(t *testing.T) {
	c := kubeapi.Shared(t)
	ctx := context.Background()
	data, err := os.ReadFile("../examples/autopath-pod.yaml")
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatal(err)
	}
	ns := obj.GetNamespace()
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pods := c.Dynamic().Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(ns)
	if _, err := pods.Create(ctx, obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("create the example pod: %v", err)
	}
	t.Cleanup(func() { pods.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })

	pod, err := c.Client().CoreV1().Pods(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	form, _ := searchpath.NewForm(apSuffix, apCluster)
	dc := pod.Spec.DNSConfig
	if pod.Spec.DNSPolicy != corev1.DNSNone || dc == nil || len(dc.Nameservers) == 0 ||
		!slices.Equal(dc.Searches, []string{form.Domain(ns)}) {
		t.Errorf("the pod's DNS: policy %s, config %+v; want None with the one search domain %s", pod.Spec.DNSPolicy, dc, form.Domain(ns))
	}
	ndots := ""
	for _, o := range dc.Options {
		if o.Name == "ndots" && o.Value != nil {
			ndots = *o.Value
		}
	}
	if ndots != "5" {
		t.Errorf("ndots %q, want 5", ndots)
	}

	if block := readmeYAML(t, "../plugin/edns0autopath/README.md"); block != string(data) {
		t.Errorf("the README's manifest is not examples/autopath-pod.yaml:\n%s", block)
	}
}

// readmeYAML is the first ~~~ yaml block of a README.
func readmeYAML(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		line := sc.Text()
		switch {
		case !in && line == "~~~ yaml":
			in = true
		case in && line == "~~~":
			return b.String()
		case in:
			b.WriteString(line + "\n")
		}
	}
	t.Fatalf("%s has no ~~~ yaml block", path)
	return ""
}
