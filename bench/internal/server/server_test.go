package server

import "testing"

func TestMemStat(t *testing.T) {
	prof := "heap profile: 1: 2 [3: 4] @ heap/1048576\n\n# runtime.MemStats\n# Alloc = 100\n# HeapInuse = 123456\n# Stack = 1 / 2\n"
	if got, err := memStat(prof, "HeapInuse"); err != nil || got != 123456 {
		t.Errorf("memStat: %d, %v; want 123456", got, err)
	}
	if _, err := memStat(prof, "HeapIdle"); err == nil {
		t.Error("memStat of a missing line: no error")
	}
}

func TestParseProm(t *testing.T) {
	text := `# HELP coredns_mesosschema_polls_total Polls.
# TYPE coredns_mesosschema_polls_total counter
coredns_mesosschema_polls_total{result="changed"} 3
coredns_mesosschema_polls_total{result="unchanged"} 21
coredns_mesosschema_poll_duration_seconds_sum 1.25
coredns_mesosschema_names 33000
`
	got := parseProm(text)
	if got[`coredns_mesosschema_polls_total{result="unchanged"}`] != 21 || got["coredns_mesosschema_poll_duration_seconds_sum"] != 1.25 ||
		got["coredns_mesosschema_names"] != 33000 || len(got) != 4 {
		t.Errorf("parseProm: %v", got)
	}
}
