package watchcache

import (
	"fmt"
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
}

func (c Config) key() string {
	return fmt.Sprintf("%q %q %q %q %q %q %q %t", c.Kubeconfig, c.Context, c.Endpoint, c.TLSCert, c.TLSKey, c.TLSCA, c.LabelSelector, c.EndpointPodNames)
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
	// Watches are long-lived and few; the defaults (5 QPS) only slow relists.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
