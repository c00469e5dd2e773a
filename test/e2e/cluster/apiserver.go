package cluster

import (
	"context"

	"k8s.io/client-go/rest"
)

// ForceRelist makes every informer list again: the API server stopped,
// etcd compacted past every revision a client has seen (CompactEtcd
// writes twice first), the API server started. Its watch cache then
// starts from a revision later than any client's, which answers every
// resumed watch with 410 Gone. It returns the revision compacted at.
func (n *Node) ForceRelist(ctx context.Context) (int64, error) {
	if err := n.api.StopAPIServer(); err != nil {
		return 0, err
	}
	rev, err := n.api.CompactEtcd(ctx)
	if err != nil {
		return 0, err
	}
	return rev, n.api.StartAPIServer(ctx)
}

// RESTConfig is the admin client configuration of the API server.
func (n *Node) RESTConfig() *rest.Config { return n.api.RESTConfig() }
