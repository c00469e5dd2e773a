package watchcache

import (
	"fmt"
	"net/http"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config says how to reach the API server and which objects to watch. Two
// plugin instances with equal Configs share one connection and one set of
// informers.
type Config struct {
	// Kubeconfig is a kubeconfig file; Context picks one of its contexts.
	Kubeconfig string
	Context    string
	// Endpoint overrides the server URL (or, alone, is the whole config).
	Endpoint string
	// TLS files for Endpoint: client certificate, key and CA.
	TLSCert, TLSKey, TLSCA string
	// LabelSelector limits the Services and EndpointSlices watched (the
	// `labels` option); empty watches all.
	LabelSelector string
	// EndpointPodNames keeps the name of each endpoint's pod (the
	// `endpoint_pod_names` option). Without it the names, which no other
	// answer needs, are not kept: at 100k endpoints they are 5 MB.
	EndpointPodNames bool
	// Limits of the client's calls; nil for the defaults. The stanzas of
	// one Corefile that share a connection share one Limits (ShareLimits).
	Limits *Limits
}

// Limits bound the calls to the API server (the apiserver_qps,
// apiserver_burst and apiserver_max_inflight options); zero means the
// default: 50 calls a second, bursts of 100, no bound on calls in flight.
type Limits struct {
	QPS         float32
	Burst       int
	MaxInflight int
}

// Default client limits: watches are long-lived and few; client-go's own
// defaults (5 QPS) only slow relists.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

func (c Config) key() string {
	return c.connectionKey() + " " + fmt.Sprint(c.limits())
}

// connectionKey says which API server and objects, whatever the limits.
func (c Config) connectionKey() string {
	return fmt.Sprintf("%q %q %q %q %q %q %q %t", c.Kubeconfig, c.Context, c.Endpoint, c.TLSCert, c.TLSKey, c.TLSCA, c.LabelSelector, c.EndpointPodNames)
}

// limits are the limits in effect: the defaults for what is not set.
func (c Config) limits() Limits {
	l := Limits{QPS: defaultQPS, Burst: defaultBurst}
	if c.Limits != nil {
		if c.Limits.QPS > 0 {
			l.QPS = c.Limits.QPS
		}
		if c.Limits.Burst > 0 {
			l.Burst = c.Limits.Burst
		}
		l.MaxInflight = c.Limits.MaxInflight
	}
	return l
}

// Validate checks what can be checked before connecting: that the files
// named exist and are readable, and that the kubeconfig parses.
func (c Config) Validate() error {
	for _, f := range []string{c.Kubeconfig, c.TLSCert, c.TLSKey, c.TLSCA} {
		if f == "" {
			continue
		}
		if _, err := os.ReadFile(f); err != nil {
			return fmt.Errorf("unreadable file: %w", err)
		}
	}
	if c.Kubeconfig != "" {
		if _, err := c.restConfig(); err != nil {
			return err
		}
	}
	return nil
}

// restConfig builds the client configuration: a kubeconfig (with optional
// context and endpoint override), an endpoint alone, or in-cluster.
func (c Config) restConfig() (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case c.Kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig}
		overrides := &clientcmd.ConfigOverrides{CurrentContext: c.Context, ClusterInfo: clientcmdapi.Cluster{Server: c.Endpoint}}
		cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
		}
	case c.Endpoint != "":
		cfg = &rest.Config{Host: c.Endpoint}
		cfg.TLSClientConfig = rest.TLSClientConfig{CertFile: c.TLSCert, KeyFile: c.TLSKey, CAFile: c.TLSCA}
	default:
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (give kubeconfig or endpoint outside a cluster): %w", err)
		}
	}
	cfg.UserAgent = "schemadns-coredns"
	l := c.limits()
	cfg.QPS, cfg.Burst = l.QPS, l.Burst
	if l.MaxInflight > 0 {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return newInflightLimit(rt, l.MaxInflight) })
	}
	return cfg, nil
}

// inflightLimit lets at most cap(slots) calls wait for their response
// headers at once. A watch holds its slot until the stream starts, not
// for the stream's life, so a bound below the number of watches cannot
// starve them.
type inflightLimit struct {
	next  http.RoundTripper
	slots chan struct{}
}

func newInflightLimit(next http.RoundTripper, max int) *inflightLimit {
	return &inflightLimit{next: next, slots: make(chan struct{}, max)}
}

func (l *inflightLimit) RoundTrip(r *http.Request) (*http.Response, error) {
	select {
	case l.slots <- struct{}{}:
	case <-r.Context().Done():
		return nil, fmt.Errorf("waiting for one of %d API calls in flight: %w", cap(l.slots), r.Context().Err())
	}
	defer func() { <-l.slots }()
	return l.next.RoundTrip(r)
}
