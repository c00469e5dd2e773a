package test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReloadKeepsAnsweringAndLeaksNothing reloads the server (as the
// reload plugin does: caddy's Restart with a new Corefile) while a client
// queries without pause: every query is answered, and after many reloads
// the goroutine count is where it was after the first (no watch leaks).
func TestReloadKeepsAnsweringAndLeaksNothing(t *testing.T) {
	e := newKubeEnv(t)
	ns := e.namespace("reload")
	e.createService(ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.200.10", Ports: []corev1.ServicePort{servicePort("http", corev1.ProtocolTCP, 80)}}})
	corefile := func(ttl int) string {
		return fmt.Sprintf(".:0 {\n bind 127.0.0.1\n kubeschema cluster.local {\n  kubeconfig %s\n  ttl %d\n }\n}\n", e.kubeconfig, ttl)
	}
	s := startServer(t, corefile(5))
	name := "web." + ns + ".svc.cluster.local."
	eventually(t, 10*time.Second, "service served", func() bool {
		r := s.exchange(t, "udp", name, dns.TypeA)
		return r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
	})

	var failures, answered atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl := &dns.Client{Timeout: 2 * time.Second}
		for {
			select {
			case <-stop:
				return
			default:
			}
			m := new(dns.Msg)
			m.SetQuestion(name, dns.TypeA)
			r, _, err := cl.Exchange(m, s.UDP)
			if err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
				failures.Add(1)
				continue
			}
			answered.Add(1)
		}
	}()

	inst := s.inst
	restart := func(ttl int) {
		t.Helper()
		caddyMu.Lock()
		defer caddyMu.Unlock()
		next, err := inst.Restart(caddy.CaddyfileInput{Contents: []byte(corefile(ttl)), Filepath: "Corefile", ServerTypeName: "dns"})
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		inst = next
	}
	restart(6)
	time.Sleep(200 * time.Millisecond)
	base := runtime.NumGoroutine()
	for i := 0; i < 8; i++ {
		restart(7 + i)
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	s.inst = inst
	t.Cleanup(func() { inst.Stop(); inst.ShutdownCallbacks() })

	if failures.Load() != 0 || answered.Load() == 0 {
		t.Errorf("during reloads: %d answered, %d failed", answered.Load(), failures.Load())
	}
	if r := s.exchange(t, "udp", name, dns.TypeA); len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 14 {
		t.Errorf("after reloads the new Corefile (ttl 14) is not in force: %v", r.Answer)
	}
	if v := gaugeValue(t, "coredns_kubeschema_synced"); v != 1 {
		t.Errorf("coredns_kubeschema_synced = %v after reloads, want 1 (the new instance serves)", v)
	}
	eventually(t, 10*time.Second, fmt.Sprintf("goroutines back to %d", base), func() bool {
		return runtime.NumGoroutine() <= base+5
	})
}
