// Package manifests holds the Kubernetes manifests the e2e scenarios apply
// beside deploy/'s own: stock CoreDNS and its node-local cache, the
// workloads and the load clients. Each names its images and addresses by
// placeholders (STOCK_IMAGE, DNS_VIP, GLIBC_IMAGE, RATE…) that the
// scenarios replace when they apply it.
package manifests

import _ "embed"

var (
	// StockCoreDNS is kubeadm's CoreDNS addon, run by our binary.
	//go:embed stock-coredns.yaml
	StockCoreDNS []byte
	// StockBeside is stock CoreDNS beside ours, on a VIP of its own.
	//go:embed stock-beside.yaml
	StockBeside []byte
	// StockNodeLocal is kubernetes' nodelocaldns addon, run by our binary.
	//go:embed stock-nodelocal.yaml
	StockNodeLocal []byte
	// Workloads are what the clients resolve, and the client pods.
	//go:embed workloads.yaml
	Workloads []byte
	// Load are the two load clients, glibc's and musl's.
	//go:embed load.yaml
	Load []byte
	// LoadOptions are load clients with dnsConfig options.
	//go:embed load-options.yaml
	LoadOptions []byte
	// LoadAutopath is the load client with the KEP-2009 search path.
	//go:embed load-autopath.yaml
	LoadAutopath []byte
	// Autopath are the pods of the node-local autopath check.
	//go:embed autopath.yaml
	Autopath []byte
	// Imports are the multicluster check's ServiceImports.
	//go:embed imports.yaml
	Imports []byte
	// RelistClient is the thresholds run's client.
	//go:embed relist-client.yaml
	RelistClient []byte
)
