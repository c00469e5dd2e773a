package k8sexternal

import (
	"errors"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/kubernetes"
	"github.com/coredns/coredns/plugin/whoami"
	"github.com/schemadns/schemadns/plugin/kubeschema"
)

// Both plugins k8s_external reads from have its backend's methods, and
// can list a zone for transfers.
var (
	_ backend = (*kubeschema.Kubeschema)(nil)
	_ backend = (*kubernetes.Kubernetes)(nil)
	_ lister  = (*kubeschema.Kubeschema)(nil)
	_ lister  = (*kubernetes.Kubernetes)(nil)
)

func TestParse(t *testing.T) {
	e, err := parse(caddy.NewTestController("dns", `k8s_external example.org Example.NET {
		apex DNS2
		ttl 30
		headless
		fallthrough example.net
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(e.Zones, " "); got != "example.org. example.net." {
		t.Errorf("zones = %q", got)
	}
	if e.apex != "dns2" || e.ttl != 30 || !e.headless {
		t.Errorf("apex %q ttl %d headless %v", e.apex, e.ttl, e.headless)
	}
	if !e.Fall.Through("a.b.example.net.") || e.Fall.Through("a.b.example.org.") {
		t.Error("fallthrough zones not applied")
	}
}

func TestParseDefaults(t *testing.T) {
	c := caddy.NewTestController("dns", "k8s_external")
	c.ServerBlockKeys = []string{"example.org:53"}
	e, err := parse(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(e.Zones, " ") != "example.org." || e.apex != "dns" || e.ttl != 5 || e.headless || e.Fall.Through("x.example.org.") {
		t.Errorf("defaults: %+v", e)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ corefile, want string }{
		{"k8s_external example.org {\n apex\n}", "Wrong argument count"},
		{"k8s_external example.org {\n apex a b\n}", "Wrong argument count"},
		{"k8s_external example.org {\n apex a.b\n}", `apex: "a.b" is not a DNS label`},
		{"k8s_external example.org {\n ttl\n}", "Wrong argument count"},
		{"k8s_external example.org {\n ttl -1\n}", "ttl must be a whole number of seconds from 0 to 3600"},
		{"k8s_external example.org {\n ttl 3601\n}", "ttl must be a whole number"},
		{"k8s_external example.org {\n ttl five\n}", "ttl must be a whole number"},
		{"k8s_external example.org {\n headless yes\n}", "Wrong argument count"},
		{"k8s_external example.org {\n upstream\n}", `unknown property "upstream"`},
		{"k8s_external exa/mple.org", `zone "exa/mple.org" is not a domain name`},
		{"k8s_external example.org\nk8s_external example.net", "only once per server block"},
	} {
		_, err := parse(caddy.NewTestController("dns", tc.corefile))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.corefile, err, tc.want)
		}
	}
}

// TestBind: the backend is kubeschema, else kubernetes; a server block
// with neither is a configuration error naming both, and so is a plugin
// of either name without the backend's methods.
func TestBind(t *testing.T) {
	ks, k8s := &kubeschema.Kubeschema{}, &kubernetes.Kubernetes{}
	for _, tc := range []struct {
		name     string
		handlers []plugin.Handler
		want     backend
		wantErr  error
	}{
		{"kubeschema alone", []plugin.Handler{ks}, ks, nil},
		{"kubernetes alone", []plugin.Handler{k8s}, k8s, nil},
		{"both: kubeschema", []plugin.Handler{k8s, ks}, ks, nil},
		{"neither", []plugin.Handler{whoami.Whoami{}}, nil, errNoBackend},
		{"impostor", []plugin.Handler{impostor{}}, nil, errNotBackend},
	} {
		byName := map[string]plugin.Handler{}
		for _, h := range tc.handlers {
			byName[h.Name()] = h
		}
		e := &External{}
		err := e.bind(func(name string) plugin.Handler { return byName[name] })
		if !errors.Is(err, tc.wantErr) || e.backend != tc.want {
			t.Errorf("%s: backend %T, error %v; want %T, %v", tc.name, e.backend, err, tc.want, tc.wantErr)
		}
	}
	err := (&External{}).bind(func(string) plugin.Handler { return nil })
	if err == nil || !strings.Contains(err.Error(), "kubeschema") || !strings.Contains(err.Error(), "kubernetes") {
		t.Errorf("error %v does not name both backends", err)
	}
}

// impostor is a plugin named kubeschema without the backend's methods.
type impostor struct{ whoami.Whoami }

func (impostor) Name() string { return "kubeschema" }
