package kubeschema

import (
	"context"
	"testing"

	"github.com/coredns/coredns/plugin/metadata"
	"github.com/coredns/coredns/plugin/test"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

func TestMetadata(t *testing.T) {
	k := newTestPlugin(t, func(o *options) { o.pods = podsVerified })
	for _, tc := range []struct {
		qname, client string
		want          map[string]string
	}{
		{"_http._tcp.web.ns1.svc.cluster.local.", "10.2.0.5", map[string]string{
			"kind": "svc", "namespace": "ns1", "service": "web", "endpoint": "", "port-name": "http", "protocol": "tcp",
			"client-namespace": "ns1", "client-pod-name": "p"}},
		{"DB-0.db.NS1.svc.cluster.local.", "10.9.9.9", map[string]string{
			"kind": "svc", "namespace": "ns1", "service": "db", "endpoint": "db-0", "port-name": "", "protocol": "",
			"client-namespace": "", "client-pod-name": ""}},
		{"10-2-0-5.ns1.pod.cluster.local.", "10.9.9.9", map[string]string{"kind": "pod", "namespace": "ns1"}},
	} {
		m := new(dns.Msg)
		m.SetQuestion(tc.qname, dns.TypeA)
		state := request.Request{W: &test.ResponseWriter{RemoteIP: tc.client}, Req: m}
		ctx := metadata.ContextWithMetadata(context.Background())
		ctx = k.Metadata(ctx, state)
		for key, want := range tc.want {
			got := ""
			if f := metadata.ValueFunc(ctx, "kubeschema/"+key); f != nil {
				got = f()
			}
			if got != want {
				t.Errorf("%s from %s: kubeschema/%s = %q, want %q", tc.qname, tc.client, key, got, want)
			}
		}
	}
}

// TestMetadataZone: with zonal, kubeschema/zone is the topology zone of a
// zonal name ("" for other names); without it the key is not set.
func TestMetadataZone(t *testing.T) {
	zoneOf := func(k *Kubeschema, qname string) (string, bool) {
		m := new(dns.Msg)
		m.SetQuestion(qname, dns.TypeA)
		ctx := k.Metadata(metadata.ContextWithMetadata(context.Background()), request.Request{W: &test.ResponseWriter{}, Req: m})
		f := metadata.ValueFunc(ctx, "kubeschema/zone")
		if f == nil {
			return "", false
		}
		return f(), true
	}
	k := newTestPlugin(t, nil)
	k.Zonal = true
	for qname, want := range map[string]string{
		"corp.example.com.pin._zone.db.ns1.svc.cluster.local.": "corp.example.com",
		"Zone-A.prefer._zone.db.ns1.svc.cluster.local.":        "zone-a",
		"db.ns1.svc.cluster.local.":                            "",
	} {
		if got, ok := zoneOf(k, qname); !ok || got != want {
			t.Errorf("%s: kubeschema/zone = %q (set %t), want %q", qname, got, ok, want)
		}
	}
	k.Zonal = false
	if got, ok := zoneOf(k, "zone-a.pin._zone.db.ns1.svc.cluster.local."); ok {
		t.Errorf("without zonal: kubeschema/zone set to %q", got)
	}
}
