package main

import "github.com/schemadns/schemadns/bench/internal/server"

func (r *shapeRun) crossChecks() []server.CrossCheck {
	by := r.servers
	out := []server.CrossCheck{server.Compare(by[server.KeyOurs], by[server.KeyStock], r.files.mix)}
	if by[server.KeyOursMC] != nil && by[server.KeyStockMC] != nil {
		out = append(out, server.Compare(by[server.KeyOursMC], by[server.KeyStockMC], r.files.mc))
	}
	for _, c := range out {
		logf("answers %s: %d of %d distinct queries differ", c.Pair, c.Differing, c.Compared)
	}
	return out
}
