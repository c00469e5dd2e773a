package searchpath

import (
	"fmt"
	"strings"

	"github.com/miekg/dns"
	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// SchemaV1 is the only schema version of the KEP: the paths of PathsV1.
const SchemaV1 = "v1"

// searchLabel is the first label of the autopath search domain.
const searchLabel = "search"

// Form is the autopath search domain search.<ns>.<cluster>.<autopath> for
// one cluster suffix and one autopath suffix. The zero value matches
// nothing; make one with NewForm.
type Form struct {
	cluster  string // "cluster.local": lower case, no trailing dot
	autopath string // "ap.k8s.io"
	suffix   string // ".cluster.local.ap.k8s.io.", what ends every match
	labels   int    // labels of suffix
}

// NewForm makes the Form of an autopath suffix ("ap.k8s.io") and a cluster
// suffix ("cluster.local"); either may end in a dot. Both must be paths of
// the option grammar.
func NewForm(autopath, cluster string) (Form, error) {
	autopath = strings.ToLower(strings.TrimSuffix(autopath, "."))
	cluster = strings.ToLower(strings.TrimSuffix(cluster, "."))
	if err := CheckPath(autopath); err != nil {
		return Form{}, fmt.Errorf("autopath suffix: %w", err)
	}
	if err := CheckPath(cluster); err != nil {
		return Form{}, fmt.Errorf("cluster suffix: %w", err)
	}
	suffix := "." + cluster + "." + autopath + "."
	n, _ := dns.IsDomainName(suffix[1:])
	return Form{cluster: cluster, autopath: autopath, suffix: suffix, labels: n}, nil
}

// Cluster is the cluster suffix, lower case without a trailing dot.
func (f Form) Cluster() string { return f.cluster }

// Autopath is the autopath suffix, lower case without a trailing dot.
func (f Form) Autopath() string { return f.autopath }

// Domain is the search domain of namespace ns, without a trailing dot:
// what goes into a pod's dnsConfig.searches.
func (f Form) Domain(ns string) string {
	return searchLabel + "." + ns + f.suffix[:len(f.suffix)-1]
}

// Name is a query name of the form <base>.search.<ns>.<cluster>.<autopath>.
type Name struct {
	// Base is what the client looked up, fully qualified and spelt as
	// asked ("web." or "svc.otherns.").
	Base string
	// Namespace is the pod's namespace, lower case.
	Namespace string
}

// Parse reports whether qname, a fully qualified presentation-format name,
// is in the search domain of some namespace with at least one label before
// it, and splits it. The suffixes match without regard to case; the
// namespace must be an RFC 1123 label; escaped dots in the base are
// understood. Parse does not allocate unless the namespace has upper case.
func (f Form) Parse(qname string) (Name, bool) {
	if f.labels == 0 || len(qname) <= len(f.suffix) || !dns.IsFqdn(qname) {
		return Name{}, false
	}
	if _, ok := dns.IsDomainName(qname); !ok {
		return Name{}, false
	}
	// The labels from the right: the suffix, the namespace, "search", and
	// at least one more.
	sfx, start := dns.PrevLabel(qname, f.labels)
	if start || sfx == 0 || !strings.EqualFold(qname[sfx-1:], f.suffix) {
		return Name{}, false
	}
	nsAt, start := dns.PrevLabel(qname, f.labels+1)
	if start || nsAt == 0 {
		return Name{}, false
	}
	searchAt, start := dns.PrevLabel(qname, f.labels+2)
	if start || searchAt == 0 || !strings.EqualFold(qname[searchAt:nsAt-1], searchLabel) {
		return Name{}, false
	}
	ns := qname[nsAt : sfx-1]
	if !dnsname.IsLabel(ns) {
		lower := strings.ToLower(ns)
		if !dnsname.IsLabel(lower) {
			return Name{}, false
		}
		ns = lower
	}
	return Name{Base: qname[:searchAt], Namespace: ns}, true
}

// PathsV1 are the search paths of schema v1 for namespace ns: the three
// cluster paths of a ClusterFirst pod, then the host-level domains given.
func (f Form) PathsV1(ns string, host ...string) []string {
	paths := make([]string, 0, 3+len(host))
	paths = append(paths, ns+".svc."+f.cluster, "svc."+f.cluster, f.cluster)
	return append(paths, host...)
}
