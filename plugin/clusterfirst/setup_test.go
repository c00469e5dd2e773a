package clusterfirst

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/whoami"
	"github.com/schemadns/schemadns/plugin/kubeschema"
	"github.com/schemadns/schemadns/plugin/mesosschema"
	"github.com/schemadns/schemadns/plugin/multicluster"

	"github.com/schemadns/schemadns/plugin/pkg/stanza/stanzatest"
)

func TestClusterfirstParse(t *testing.T) {
	tests := []struct {
		corefile      string
		err           string // part of the error; "" for none
		zones         []string
		target, bound time.Duration
	}{
		{corefile: "clusterfirst", target: defaultTarget, bound: defaultBound},
		{corefile: "clusterfirst Cluster.Local clusterset.local. 10.96.0.0/16", zones: []string{"cluster.local.", "clusterset.local.", "96.10.in-addr.arpa."},
			target: defaultTarget, bound: defaultBound},
		{corefile: "clusterfirst cluster.local {\n target 2ms\n bound 50ms\n}", zones: []string{"cluster.local."}, target: 2 * time.Millisecond, bound: 50 * time.Millisecond},
		{corefile: "clusterfirst {\n target 2ms\n}", target: 2 * time.Millisecond, bound: defaultBound},
		{corefile: "clusterfirst {\n bound 6ms\n}", target: defaultTarget, bound: 6 * time.Millisecond},
		{corefile: "clusterfirst {\n target 3ms\n}", err: "bound 3ms must be longer than target 3ms"},
		{corefile: "clusterfirst {\n target 20ms\n bound 10ms\n}", err: "must be longer than target"},
		{corefile: "clusterfirst {\n bound 1ms\n}", err: "must be longer than target"},
		{corefile: "clusterfirst {\n target 0s\n}", err: `target: "0s" is not a positive duration`},
		{corefile: "clusterfirst {\n bound -1ms\n}", err: "not a positive duration"},
		{corefile: "clusterfirst {\n target soon\n}", err: "not a positive duration"},
		{corefile: "clusterfirst {\n target\n}", err: "Wrong argument count"},
		{corefile: "clusterfirst {\n bound 1s 2s\n}", err: "Wrong argument count"},
		{corefile: "clusterfirst {\n window 10ms\n}", err: `unknown property "window"`},
		{corefile: "clusterfirst a/b", err: "not a domain name"},
		{corefile: "clusterfirst\nclusterfirst", err: plugin.ErrOnce.Error()},
	}
	for _, tc := range tests {
		cf, ok := stanzatest.Parse(t, tc.corefile, tc.err, parse)
		if !ok {
			continue
		}
		if !slices.Equal(cf.Zones, tc.zones) || cf.sampler.target != tc.target || cf.sampler.bound != tc.bound {
			t.Errorf("%q: zones %q target %v bound %v", tc.corefile, cf.Zones, cf.sampler.target, cf.sampler.bound)
		}
		if cf.signal != overload(cf.sampler) {
			t.Errorf("%q: the handler does not read the sampler's level", tc.corefile)
		}
	}
}

// TestClusterfirstParseErrorNamesTheLine: a Corefile error says where it is.
func TestClusterfirstParseErrorNamesTheLine(t *testing.T) {
	_, err := parse(caddy.NewTestController("dns", "clusterfirst {\n    target 1ms\n    bound 1h\n    bogus\n}"))
	if err == nil || !strings.Contains(err.Error(), "Testfile:4") {
		t.Errorf("error %v does not name line 4", err)
	}
}

func TestClusterfirstSetupTransports(t *testing.T) {
	for _, tc := range []struct {
		keys []string
		ok   bool
	}{
		{keys: []string{".:53"}, ok: true},
		{keys: []string{"dns://cluster.local:53", "in-addr.arpa"}, ok: true},
		{keys: []string{"tls://.:853"}},
		{keys: []string{".:53", "quic://.:853"}},
		{keys: []string{"https://.:443"}},
	} {
		c := caddy.NewTestController("dns", "clusterfirst cluster.local")
		c.ServerBlockKeys = tc.keys
		err := setup(c)
		if tc.ok != (err == nil) {
			t.Errorf("%v: error %v", tc.keys, err)
		}
		if err != nil && !strings.Contains(err.Error(), "only plain DNS") {
			t.Errorf("%v: error %v does not say why", tc.keys, err)
		}
	}
}

// zoned stands for a schema plugin.
type zoned struct {
	whoami.Whoami
	zones []string
}

func (z zoned) ServedZones() []string { return z.zones }

func TestClusterfirstStartFindsZones(t *testing.T) {
	k := &kubeschema.Kubeschema{}
	k.Zones = []string{"cluster.local.", "in-addr.arpa."}
	m := &multicluster.Multicluster{}
	m.Zones = []string{"clusterset.local.", "in-addr.arpa."}
	ms := &mesosschema.Mesosschema{}
	ms.Zones = []string{"mesos."}
	for _, tc := range []struct {
		name     string
		stanza   string
		handlers []plugin.Handler
		zones    []string
		err      error
	}{
		{name: "the schema plugins", stanza: "clusterfirst", handlers: []plugin.Handler{whoami.Whoami{}, k, m, ms},
			zones: []string{"cluster.local.", "clusterset.local.", "in-addr.arpa.", "mesos."}},
		{name: "any zone server, lower case", stanza: "clusterfirst", handlers: []plugin.Handler{zoned{zones: []string{"Example.ORG."}}},
			zones: []string{"example.org."}},
		{name: "the stanza's zones win", stanza: "clusterfirst cluster.local", handlers: []plugin.Handler{k, m},
			zones: []string{"cluster.local."}},
		{name: "none", stanza: "clusterfirst", handlers: []plugin.Handler{whoami.Whoami{}}, err: errNoZones},
		{name: "a zone server without zones", stanza: "clusterfirst", handlers: []plugin.Handler{&kubeschema.Kubeschema{}}, err: errNoZones},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf, err := parse(caddy.NewTestController("dns", tc.stanza))
			if err != nil {
				t.Fatal(err)
			}
			err = cf.start(tc.handlers)
			defer cf.sampler.stop()
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if !slices.Equal(cf.Zones, tc.zones) {
				t.Errorf("zones %q, want %q", cf.Zones, tc.zones)
			}
		})
	}
}
