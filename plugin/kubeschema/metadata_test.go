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
