// Package test holds whole-server tests: CoreDNS with this project's
// plugins, started in-process from a Corefile, against a real etcd and
// kube-apiserver (package kubeapi), queried with real DNS clients.
package test

import (
	"testing"

	"github.com/schemadns/schemadns/internal/kubeapi"
)

func TestMain(m *testing.M) { kubeapi.ForTest(m, kubeapi.Options{}) }
