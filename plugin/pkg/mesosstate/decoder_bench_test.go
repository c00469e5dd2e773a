package mesosstate_test

import (
	"bytes"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// BenchmarkDecoder reads the M1 state (BenchShape: 10,000 running tasks)
// whole with Decode, and with a Decoder that read it before with 1% of
// its running tasks on another agent, or the same (the client skips a
// state of the same bytes: this is the floor of a decoder's poll).
//
//	go test -run '^$' -bench Decoder -benchmem ./plugin/pkg/mesosstate
func BenchmarkDecoder(b *testing.B) {
	st := mesosstatetest.Generate(mesosstatetest.BenchShape)
	body := mesosstatetest.Marshal(st)
	moved := 0
	for fi := range st.Frameworks {
		for ti := range st.Frameworks[fi].Tasks {
			if t := &st.Frameworks[fi].Tasks[ti]; t.Running() && moved%100 == 0 {
				t.SlaveID = st.Slaves[0].ID
			}
			moved++
		}
	}
	changed := mesosstatetest.Marshal(st)
	b.Run("whole", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := mesosstate.Decode(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name   string
		bodies [][]byte
	}{{"1%", [][]byte{body, changed}}, {"same", [][]byte{body, body}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			d := mesosstate.NewDecoder()
			i := 0
			for b.Loop() {
				if _, err := d.Decode(bytes.NewReader(c.bodies[i%2])); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(d.Stats().TasksDecoded), "tasks-decoded")
		})
	}
}
