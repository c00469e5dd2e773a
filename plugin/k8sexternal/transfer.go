package k8sexternal

import (
	"context"
	"slices"
	"strings"

	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/etcd/msg"
	"github.com/coredns/coredns/plugin/transfer"
	"github.com/coredns/coredns/request"
	"github.com/miekg/dns"
)

// lister is a backend that can list a zone, for transfers; kubeschema
// and the stock kubernetes plugin both are.
type lister interface {
	// ExternalServices returns what External answers in zone: services
	// whose keys are names of the zone, and (with headless) lists by key
	// whose last element says what they are.
	ExternalServices(zone string, headless bool) ([]msg.Service, map[string][]msg.Service)
}

// transferTypes are the types a transfer sends of a name: SRV alone for
// _<port>._<proto> names (queries of their addresses are answered, as
// CoreDNS's k8s_external answers them, but its transfers leave them out).
func transferTypes(name string) []uint16 {
	if strings.HasPrefix(name, "_") {
		return []uint16{dns.TypeSRV}
	}
	return []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeSRV}
}

// Transfer implements transfer.Transferer: the SOA, the apex NS and the
// name server's addresses, then every name's records (transferTypes) as
// queries get them, then the SOA again. A client whose serial is current
// gets the SOA alone. NOTIFY is not sent.
func (e *External) Transfer(zone string, serial uint32) (<-chan []dns.RR, error) {
	l, ok := e.backend.(lister)
	if !ok || plugin.Zones(e.Zones).Matches(zone) != zone {
		return nil, transfer.ErrNotAuthoritative
	}
	soa := e.soa(zone)
	ch := make(chan []dns.RR, 2)
	ch <- []dns.RR{soa}
	if serial != 0 && serial >= soa.Serial {
		close(ch)
		return ch, nil
	}
	go func() {
		defer close(ch)
		q := &query{ctx: context.Background(), state: request.Request{Zone: zone, Req: new(dns.Msg)}}
		q.state.Req.SetQuestion(zone, dns.TypeNS)
		if apex := e.apexRecords(q); len(apex.answer) > 0 {
			ch <- append(apex.answer, apex.extra...)
		}
		for _, name := range zoneNames(l.ExternalServices(zone, e.headless)) {
			for _, qtype := range transferTypes(name) {
				if rrs := e.lookup(zone, name, qtype); len(rrs) > 0 {
					ch <- rrs
				}
			}
		}
		ch <- []dns.RR{soa}
	}()
	return ch, nil
}

// lookup is the answer to name and qtype, as a query gets it.
func (e *External) lookup(zone, name string, qtype uint16) []dns.RR {
	q := &query{ctx: context.Background(), state: request.Request{Zone: zone, Req: new(dns.Msg)}}
	q.state.Req.SetQuestion(name, qtype)
	svcs, _ := e.backend.External(q.state, e.headless)
	if len(svcs) == 0 {
		return nil
	}
	return e.records(q, svcs).answer
}

// zoneNames are the names of the listed services, sorted: their keys as
// names, and the keys of the lists without their last element. Names
// with a label "_" (the stock plugin's SRV names of unnamed ports) are
// left out.
func zoneNames(svcs []msg.Service, lists map[string][]msg.Service) []string {
	seen := map[string]bool{}
	add := func(key string) {
		name := msg.Domain(key)
		if !slices.Contains(dns.SplitDomainName(name), "_") {
			seen[name] = true
		}
	}
	for _, s := range svcs {
		add(s.Key)
	}
	for key, list := range lists {
		add(key[:strings.LastIndexByte(key, '/')])
		for _, s := range list {
			add(s.Key)
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
