package main

import (
	"testing"
)

func TestPickShapes(t *testing.T) {
	got, mesos, err := pickShapes("default", "s4, M2, S2")
	if err != nil || len(got) != 2 || got[0].Name != "S2" || got[1].Name != "S4" {
		t.Errorf("pickShapes: %v, %v; want S2 and S4 in the scale's order", got, err)
	}
	if len(mesos) != 1 || mesos[0].Name != "M2" || !mesos[0].Worst {
		t.Errorf("pickShapes: Mesos shapes %v; want M2, the worst case", mesos)
	}
	if got, mesos, err := pickShapes("small", "M1"); err != nil || len(got) != 0 || len(mesos) != 1 || mesos[0].Gen.Tasks != 1000 {
		t.Errorf("pickShapes small M1: %v, %v, %v; want M1 alone at a tenth", got, mesos, err)
	}
	if got, _, err := pickShapes("small", "S5"); err != nil || len(got) != 1 || got[0].Cluster == nil || got[0].Cluster.Namespaces*got[0].Cluster.PodsPerNamespace != 15000 {
		t.Errorf("pickShapes small S5: %v, %v; want the threshold shape at a tenth (15,000 pods)", got, err)
	}
	if _, _, err := pickShapes("default", "S6"); err == nil {
		t.Error("pickShapes S6: no error")
	}
}
