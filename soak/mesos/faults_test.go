package mesos

import (
	"io"
	"net/http"
	"testing"

	"github.com/schemadns/schemadns/internal/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
)

// TestBadStatesRejected: every bad state, served by a stand-in master, is
// one a client must refuse: not 200, a body that does not decode, or a
// state naming another leader than the master that served it.
func TestBadStatesRejected(t *testing.T) {
	m, err := mesosmaster.Start(mesosmaster.Options{Listen: "127.0.0.2:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	c := newCluster(100, 1)
	e := &env{cluster: c}
	good := e.leaderBody(m)
	if _, err := mesosstate.Decode(good); err != nil {
		t.Fatalf("the good body: %v", err)
	}
	for _, b := range badStates {
		b.apply(m, good)
		resp, err := http.Get(m.URL() + "/master/state")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m.SetStatus(0)
		if resp.StatusCode != http.StatusOK {
			continue
		}
		s, err := mesosstate.Decode(body)
		if err == nil && s.Leader == m.PID() {
			t.Errorf("%s: decodes, leader %s", b.what, s.Leader)
		}
	}
}
