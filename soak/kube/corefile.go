package kube

import (
	"fmt"

	"github.com/schemadns/schemadns/soak/server"
)

// The two servers' keys, as the report names them.
const (
	KeyOurs  = "ours"
	KeyStock = "stock"
)

// oursCorefile runs the three plugins in one process: kubeschema and
// multicluster answer cluster.local and clusterset.local on one port, with
// ready and prometheus in that block so that readiness covers both;
// edns0autopath has its own block, in front of a kubeschema of its own (the
// watch cache is shared by every instance, so this costs no second
// connection).
func oursCorefile(kc string, s *server.Server) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    kubeschema cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        fallthrough in-addr.arpa ip6.arpa
    }
    multicluster clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
    }
}
.:%d {
    bind 127.0.0.1
    edns0autopath
    kubeschema cluster.local {
        kubeconfig %s
    }
}
`, s.Port, s.ReadyPort, s.MetricsPort, s.PprofPort, kc, kc, s.APPort, kc)
}

// stockCorefile is the comparison: the stock plugin with the same zones,
// multicluster included (its own option for clusterset.local).
func stockCorefile(kc string, s *server.Server) string {
	return fmt.Sprintf(`.:%d {
    bind 127.0.0.1
    ready 127.0.0.1:%d
    prometheus 127.0.0.1:%d
    pprof 127.0.0.1:%d
    kubernetes cluster.local clusterset.local in-addr.arpa ip6.arpa {
        kubeconfig %s
        multicluster clusterset.local
    }
}
`, s.Port, s.ReadyPort, s.MetricsPort, s.PprofPort, kc)
}
