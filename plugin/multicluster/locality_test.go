package multicluster

import (
	"bytes"
	"context"
	golog "log"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// Unit tests of the local-cluster preference (trafficDistribution
// PreferClose) and of ipFamilies, through the builder and the handler;
// test/multicluster_locality_test.go has the whole-server tests.

// answers are the Answer section's records of name/qtype, sorted, with
// the rcode.
func (x *built) answers(name string, qtype uint16) (int, []string) {
	x.t.Helper()
	w := dnstest.NewRecorder(&test.ResponseWriter{})
	if _, err := x.m.ServeDNS(context.Background(), w, test.Case{Qname: name, Qtype: qtype}.Msg()); err != nil {
		x.t.Fatal(err)
	}
	var out []string
	for _, rr := range w.Msg.Answer {
		f := strings.Fields(rr.String())
		out = append(out, strings.Join(f[3:], " ")) // type and data
	}
	slices.Sort(out)
	return w.Msg.Rcode, out
}

func (x *built) want(name string, qtype uint16, want ...string) {
	x.t.Helper()
	rcode, got := x.answers(name, qtype)
	slices.Sort(want)
	if rcode != dns.RcodeSuccess || !slices.Equal(got, want) {
		x.t.Errorf("%s %s: %s %q, want NOERROR %q", name, dns.TypeToString[qtype], dns.RcodeToString[rcode], got, want)
	}
}

// preferClose is a headless v1beta1 import with trafficDistribution
// PreferClose.
func preferClose(ns, name string) *mcsv1beta1.ServiceImport {
	return &mcsv1beta1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1beta1.ServiceImportSpec{Type: mcsv1beta1.Headless, TrafficDistribution: ptr("PreferClose"),
			Ports: []mcsv1beta1.ServicePort{{Name: "pg", Protocol: corev1.ProtocolTCP, Port: 5432}}}}
}

// newLocal is the fixture with a PreferClose import "near" served from
// cluster-a and cluster-b, the local cluster being id.
func newLocal(t *testing.T, id string) *built {
	x := newBuilt(t)
	x.src.Add(t, preferClose("ns1", "near"),
		importedSlice("ns1", "near-a", "near", "Cluster-A", 5432, ep{addr: "10.5.0.1", host: "a0"}, ep{addr: "10.5.0.2", host: "a1"}),
		importedSlice("ns1", "near-b", "near", "cluster-b", 5433, ep{addr: "10.5.1.1", host: "b0"}))
	x.b.setClusterID(id)
	x.event(importEvent("ns1", "near"))
	return x
}

const near = "near.ns1.svc.clusterset.local."

// TestMulticlusterPreferCloseLocal: the service name and its SRV records
// answer with the local cluster's endpoints; host names of every cluster
// stay; PTR records too.
func TestMulticlusterPreferCloseLocal(t *testing.T) {
	x := newLocal(t, "cluster-a")
	x.want(near, dns.TypeA, "A 10.5.0.1", "A 10.5.0.2")
	x.want("_pg._tcp."+near, dns.TypeSRV, "SRV 0 50 5432 a0.cluster-a."+near, "SRV 0 50 5432 a1.cluster-a."+near)
	x.want("b0.cluster-b."+near, dns.TypeA, "A 10.5.1.1")
	x.want("1.1.5.10.in-addr.arpa.", dns.TypePTR, "PTR b0.cluster-b."+near)
	// An import without PreferClose is not filtered.
	x.want("db.ns1.svc.clusterset.local.", dns.TypeA, "A 10.1.0.1", "A 10.1.0.2", "A 10.2.0.1")

	// No ready endpoint left in the local cluster: every cluster's.
	x.src.Add(t, importedSlice("ns1", "near-a", "near", "cluster-a", 5432, ep{addr: "10.5.0.1", host: "a0", unready: true}))
	x.event(sliceEvent("ns1", "", "near"))
	x.want(near, dns.TypeA, "A 10.5.1.1")
	x.want("_pg._tcp."+near, dns.TypeSRV, "SRV 0 100 5433 b0.cluster-b."+near)
}

// TestMulticlusterPreferCloseIDChanges: a cluster ID learnt, changed and
// lost rebuilds the PreferClose imports.
func TestMulticlusterPreferCloseIDChanges(t *testing.T) {
	x := newLocal(t, "cluster-b")
	x.want(near, dns.TypeA, "A 10.5.1.1")
	x.b.setClusterID("cluster-a")
	x.want(near, dns.TypeA, "A 10.5.0.1", "A 10.5.0.2")
	x.b.setClusterID("")
	x.want(near, dns.TypeA, "A 10.5.0.1", "A 10.5.0.2", "A 10.5.1.1")
	l := &learntID{}
	l.attach(x.b)
	l.set("cluster-b")
	x.want(near, dns.TypeA, "A 10.5.1.1")
	l.set("Not_A_Label") // not an ID: unknown
	x.want(near, dns.TypeA, "A 10.5.0.1", "A 10.5.0.2", "A 10.5.1.1")
}

// TestMulticlusterPreferCloseNoID: without a cluster ID the field is
// ignored, and one line says so, however many imports and rebuilds.
func TestMulticlusterPreferCloseNoID(t *testing.T) {
	var buf bytes.Buffer
	golog.SetOutput(&buf)
	t.Cleanup(func() { golog.SetOutput(os.Stderr) })
	x := newLocal(t, "")
	x.src.Add(t, preferClose("ns1", "near2"), importedSlice("ns1", "near2-a", "near2", "cluster-a", 5432, ep{addr: "10.5.2.1"}))
	x.event(importEvent("ns1", "near2"), importEvent("ns1", "near"))
	x.want(near, dns.TypeA, "A 10.5.0.1", "A 10.5.0.2", "A 10.5.1.1")
	if n := strings.Count(buf.String(), "PreferClose"); n != 1 {
		t.Errorf("%d lines on PreferClose without a cluster ID, want 1:\n%s", n, buf.String())
	}
}

// TestMulticlusterIPFamilies: ipFamilies limits the addresses served, of
// a ClusterSetIP import and of a headless one.
func TestMulticlusterIPFamilies(t *testing.T) {
	x := newBuilt(t)
	v4 := clusterSetIP("ns1", "fam", []string{"10.42.0.40", "fd00:42::40"}, port("http", corev1.ProtocolTCP, 80))
	v4.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	v6 := headlessImport("ns1", "fam6", port("pg", corev1.ProtocolTCP, 5432))
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	x.src.Add(t, v4, v6,
		importedSlice("ns1", "fam6-a", "fam6", "cluster-a", 5432, ep{addr: "10.6.0.1", host: "p"}),
		importedSlice("ns1", "fam6-a-v6", "fam6", "cluster-a", 5432, ep{addr: "fd00:6::1", host: "p"}))
	x.event(importEvent("ns1", "fam"), importEvent("ns1", "fam6"))
	x.want("fam.ns1.svc.clusterset.local.", dns.TypeA, "A 10.42.0.40")
	x.expect("fam.ns1.svc.clusterset.local.", dns.TypeAAAA, dns.RcodeSuccess, "")
	x.want("fam6.ns1.svc.clusterset.local.", dns.TypeAAAA, "AAAA fd00:6::1")
	x.expect("fam6.ns1.svc.clusterset.local.", dns.TypeA, dns.RcodeSuccess, "")
	x.expect("1.0.6.10.in-addr.arpa.", dns.TypePTR, dns.RcodeNameError, "")
}
