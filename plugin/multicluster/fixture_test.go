package multicluster

import (
	"net/netip"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/kubesource"
	"github.com/schemadns/schemadns/plugin/pkg/watchcache/watchcachetest"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
)

// memSource is the shared in-memory source (watchcachetest); the
// integration tests in test/ use the real cache and API server.
type memSource = watchcachetest.Source

func ptr[T any](v T) *T { return &v }

func port(name string, proto corev1.Protocol, n int32) mcsv1alpha1.ServicePort {
	return mcsv1alpha1.ServicePort{Name: name, Protocol: proto, Port: n}
}

// clusterSetIP is a ClusterSetIP import.
func clusterSetIP(ns, name string, ips []string, ports ...mcsv1alpha1.ServicePort) *mcsv1alpha1.ServiceImport {
	return &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.ClusterSetIP, IPs: ips, Ports: ports}}
}

// headlessImport is a Headless import.
func headlessImport(ns, name string, ports ...mcsv1alpha1.ServicePort) *mcsv1alpha1.ServiceImport {
	return &mcsv1alpha1.ServiceImport{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: mcsv1alpha1.ServiceImportSpec{Type: mcsv1alpha1.Headless, Ports: ports}}
}

type ep struct {
	addr, host  string
	unready     bool
	terminating bool
}

// importedSlice is a slice of import imp from cluster (no label when
// cluster is ""), with one pg port.
func importedSlice(ns, name, imp, cluster string, pgPort int32, eps ...ep) *discoveryv1.EndpointSlice {
	labels := map[string]string{kubesource.LabelMultiClusterServiceName: imp}
	if cluster != "" {
		labels[kubesource.LabelSourceCluster] = cluster
	}
	return endpointSlice(ns, name, labels, pgPort, eps...)
}

// localSlice is a slice of the local service svc.
func localSlice(ns, name, svc string, eps ...ep) *discoveryv1.EndpointSlice {
	return endpointSlice(ns, name, map[string]string{discoveryv1.LabelServiceName: svc}, 5432, eps...)
}

func endpointSlice(ns, name string, labels map[string]string, pgPort int32, eps ...ep) *discoveryv1.EndpointSlice {
	at := discoveryv1.AddressTypeIPv4
	if len(eps) > 0 && netip.MustParseAddr(eps[0].addr).Is6() {
		at = discoveryv1.AddressTypeIPv6
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		AddressType: at,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("pg"), Protocol: ptr(corev1.ProtocolTCP), Port: ptr(pgPort)}},
	}
	for _, e := range eps {
		de := discoveryv1.Endpoint{Addresses: []string{e.addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(!e.unready), Terminating: ptr(e.terminating)}}
		if e.host != "" {
			de.Hostname = ptr(e.host)
		}
		s.Endpoints = append(s.Endpoints, de)
	}
	return s
}

func localService(ns, name string, ips ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ips[0], ClusterIPs: ips, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}}}}
}

// fixture is a clusterset with one of every kind of import and each bad
// input the README names.
func fixture(t testing.TB) *memSource {
	m := &memSource{}
	pg := port("pg", corev1.ProtocolTCP, 5432)
	m.Add(t,
		clusterSetIP("ns1", "web", []string{"10.42.0.10", "fd00:42::10"},
			port("http", corev1.ProtocolTCP, 80), port("dns", corev1.ProtocolUDP, 53)),
		clusterSetIP("ns1", "v6only", []string{"fd00:42::11"}, port("http", "", 80)), // no protocol: TCP
		clusterSetIP("ns1", "plain", []string{"10.42.0.12"}, port("", corev1.ProtocolTCP, 8080)),
		clusterSetIP("ns1", "noips", nil, port("http", corev1.ProtocolTCP, 80)),
		headlessImport("ns1", "db", pg),
		importedSlice("ns1", "db-a", "db", "cluster-a", 15432,
			ep{addr: "10.1.0.1", host: "db-0"}, ep{addr: "10.1.0.2"}, ep{addr: "10.1.0.3", unready: true},
			ep{addr: "10.1.0.4", terminating: true}),
		importedSlice("ns1", "db-a-v6", "db", "cluster-a", 15432, ep{addr: "fd00::1", host: "db-0"}),
		// 10.1.0.1 and 10.1.0.2 are claimed by cluster-b too: served once, from cluster-a.
		importedSlice("ns1", "db-b", "db", "Cluster-B", 5432, ep{addr: "10.2.0.1", host: "db-0"}, ep{addr: "10.1.0.2"}, ep{addr: "10.1.0.1"}),
		importedSlice("ns1", "db-nocluster", "db", "", 5432, ep{addr: "10.9.0.1"}),
		importedSlice("ns1", "db-badcluster", "db", "cluster.c", 5432, ep{addr: "10.9.0.2"}),
		headlessImport("ns1", "asleep", pg),
		importedSlice("ns1", "asleep-a", "asleep", "cluster-a", 5432, ep{addr: "10.3.0.1", unready: true}),
		// This cluster's own names for two imported addresses: theirs win.
		clusterSetIP("ns1", "dummied", []string{"10.42.0.20"}, port("http", corev1.ProtocolTCP, 80)),
		localService("ns1", "gke-mcs-dummied", "10.42.0.20"),
		localSlice("ns2", "local-db-1", "local-db", ep{addr: "10.2.0.1", host: "db-0"}),
	)
	return m
}
