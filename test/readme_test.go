package test

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// readmeQuery is a query a README's corefile block must answer, and the
// exact reply.
type readmeQuery struct {
	name  string
	qtype uint16
	want  wantReply
}

// readmeQueries are, for every README, the query each of its ~~~ corefile
// blocks must answer, block by block: a README with more or fewer blocks
// than listed here fails the test. Every block is served with the shared
// API server, where the service kubernetes.default has the cluster IP
// 10.96.0.1 and the namespace default exists, and with a stand-in Mesos
// master serving examples/mesos/state.json as its own (the leader is
// 127.0.0.1).
func readmeQueries() map[string][]readmeQuery {
	const (
		apiIP   = "10.96.0.1"
		apiName = "kubernetes.default.svc.cluster.local."
	)
	apiPTR := readmeQuery{"1.0.96.10.in-addr.arpa.", dns.TypePTR, answer(rrLine("1.0.96.10.in-addr.arpa.", "PTR", apiName))}
	// A search-domain name: the servers answer it with a CNAME to the
	// first candidate that exists, then its records.
	autopath := func(cluster string) readmeQuery {
		name := "kubernetes.search.default." + cluster + "ap.k8s.io."
		found := "kubernetes.default.svc." + cluster
		return readmeQuery{name, dns.TypeA, wantReply{answer: []string{
			rrLine(name, "CNAME", found), rrLine(found, "A", apiIP)}, ordered: true}}
	}
	return map[string][]readmeQuery{
		// kubeschema and multicluster in one server: kubeschema answers
		// the reverse name of the address it owns.
		"../README.md": {apiPTR},
		"../plugin/kubeschema/README.md": {
			// pods insecure: any address in any namespace.
			{"10-1-2-3.default.pod.cluster.local.", dns.TypeA, answer(rrLine("10-1-2-3.default.pod.cluster.local.", "A", "10.1.2.3"))},
			// reverse_cidrs auto: a free service address is NXDOMAIN
			// here, not passed on.
			{"254.255.96.10.in-addr.arpa.", dns.TypePTR, nxdomain(soaLine(reverse4Zone, clusterZone))},
			// namespaces default team-a: default is served.
			{apiName, dns.TypeA, answer(rrLine(apiName, "A", apiIP))},
		},
		"../plugin/multicluster/README.md": {
			// An address nobody owns: kubeschema falls through, and
			// multicluster says NXDOMAIN with its SOA.
			{"254.255.247.10.in-addr.arpa.", dns.TypePTR, nxdomain(soaLine(reverse4Zone, clustersetZone))},
			{"dns-version." + clustersetZone, dns.TypeTXT, answer(rrLine("dns-version."+clustersetZone, "TXT", `"1.0.0"`))},
			// cluster_id clustera.
			{"dns-version." + clustersetZone, dns.TypeTXT, answer(rrLine("dns-version."+clustersetZone, "TXT", `"1.0.0"`))},
		},
		// Unloaded, clusterfirst passes every query on: its zones found
		// at startup (kubeschema's, the reverse ones too), then given.
		"../plugin/clusterfirst/README.md": {apiPTR, {apiName, dns.TypeA, answer(rrLine(apiName, "A", apiIP))}},
		"../plugin/edns0autopath/README.md": {
			autopath(clusterZone),
			// cluster_suffix cluster.example.
			autopath("cluster.example."),
		},
		"../plugin/k8sexternal/README.md": {
			// The zone's SOA, with the default apex and TTL.
			{"example.org.", dns.TypeSOA, answer(rrLine("example.org.", "SOA", "ns1.dns.example.org. hostmaster.dns.example.org. 0 7200 1800 86400 5"))},
			// ttl 30: the name server where the server listens.
			{"ns1.dns.example.org.", dns.TypeA, answer("ns1.dns.example.org. 30 IN A 127.0.0.1")},
		},
		// The node-local cache, in front of the test's cluster DNS.
		"../plugin/gensearchpath/README.md": {autopath(clusterZone), autopath(clusterZone)},
		// A node-local block in front of the test's cluster DNS, over TCP.
		"../plugin/hold/README.md":     {{apiName, dns.TypeA, answer(rrLine(apiName, "A", apiIP))}},
		"../plugin/handover/README.md": {{apiName, dns.TypeA, answer(rrLine(apiName, "A", apiIP))}},
		"../plugin/mesosschema/README.md": {
			// The leader, with the default TTL.
			{"leader.mesos.", dns.TypeA, answer("leader.mesos. 60 IN A " + mesosMasterIP)},
			// The reverse zone 10.0.0.0/8, with ttl 30: an agent's address.
			{"21.1.0.10.in-addr.arpa.", dns.TypePTR, answer("21.1.0.10.in-addr.arpa. 30 IN PTR slave.mesos.")},
		},
	}
}

// readmeClusterDNS is the cluster DNS that the node-local Corefiles of the
// gensearchpath README forward to (10.96.0.10 there): port, kubeconfig.
const readmeClusterDNS = `.:%d {
    bind 127.0.0.1
    edns0autopath
    kubeschema cluster.local {
        kubeconfig %s
    }
}
`

// TestReadmeCorefiles starts a server from every `~~~ corefile` block of
// every README, so the documented examples keep working, and checks that
// each gives the exact reply to its query in readmeQueries. The blocks are
// adapted to the test machine (forTest); nothing else is changed.
func TestReadmeCorefiles(t *testing.T) {
	e := newKubeEnv(t)
	upstream := startStubUpstream(t)
	clusterPort := freeLoopbackPort(t)
	startServer(t, fmt.Sprintf(readmeClusterDNS, clusterPort, e.kubeconfig))
	master := startMesosMaster(t, exampleMesosState(t))
	env := readmeEnv{kubeconfig: e.kubeconfig, upstream: upstream.addr, clusterDNS: fmt.Sprintf("127.0.0.1:%d", clusterPort),
		mesosMaster: master.Addr()}

	readmes, err := filepath.Glob("../plugin/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	readmes = append(readmes, "../README.md")
	queries := readmeQueries()
	total := 0
	for _, readme := range readmes {
		blocks := corefileBlocks(t, readme)
		total += len(blocks)
		want, listed := queries[readme]
		if !listed || len(want) == 0 {
			t.Errorf("%s has %d corefile blocks; readmeQueries lists no query for it", readme, len(blocks))
			continue
		}
		if len(blocks) != len(want) {
			t.Errorf("%s has %d corefile blocks, want %d", readme, len(blocks), len(want))
			continue
		}
		label := filepath.Base(filepath.Dir(readme))
		if label == ".." {
			label = "README"
		}
		for i, block := range blocks {
			q := want[i]
			corefile := forTest(block, env)
			t.Run(label+"/"+string(rune('a'+i)), func(t *testing.T) {
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("%s block %d, as served:\n%s", readme, i+1, corefile)
					}
				})
				s := startServer(t, corefile)
				expect(t, s, "udp", q.name, q.qtype, q.want, settleTimeout)
			})
		}
	}
	for readme := range queries {
		if !slices.Contains(readmes, readme) {
			t.Errorf("%s is listed in readmeQueries but not found", readme)
		}
	}
	if total == 0 {
		t.Errorf("no corefile block in %v", readmes)
	}
}

// corefileBlocks returns the contents of the ~~~ corefile blocks of path.
func corefileBlocks(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case cur == nil && (line == "~~~ corefile" || line == "```corefile"):
			cur = &strings.Builder{}
		case cur != nil && (line == "~~~" || line == "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// readmeEnv is what forTest points a documented Corefile at.
type readmeEnv struct {
	kubeconfig string
	// upstream stands in for the resolvers of /etc/resolv.conf.
	upstream string
	// clusterDNS stands in for the cluster DNS at 10.96.0.10.
	clusterDNS string
	// mesosMaster (host:port) stands in for the masters mesosschema lists;
	// mesosHTTP is where its HTTP interface listens (127.0.0.1:0 when
	// empty: a free port, shared by the instances that name it at once,
	// as the plugin shares one listener per address; the blocks here run
	// one at a time).
	mesosMaster, mesosHTTP string
}

var (
	serverPort   = regexp.MustCompile(`(?m)^(\S*?):\d+(\s*\{)`)
	bareServer   = regexp.MustCompile(`(?m)^([a-z.]+[a-z])(\s*\{)`)
	serverBlock  = regexp.MustCompile(`(?m)^(\S+:0\s*\{)$`)
	listenAddr   = regexp.MustCompile(`(?m)^(\s*(?:prometheus|health|ready))(?:\s+\S*:\d+)?\s*$`)
	kubeconfig   = regexp.MustCompile(`(?m)^(\s*kubeconfig)\s+\S+`)
	openKubeStub = regexp.MustCompile(`(?m)^(\s*(?:kubeschema|multicluster)\b[^{\n]*\{)\s*$`)
	bareKube     = regexp.MustCompile(`(?m)^(\s*(?:kubeschema|multicluster)\b[^{\n]*)$`)
	resolvConf   = regexp.MustCompile(`(?m)^(\s*forward\s+\S+\s+)/etc/resolv\.conf\b`)
	bindLine     = regexp.MustCompile(`(?m)^\s*bind\s`)
	// mesosschema's options.
	mesosMasters = regexp.MustCompile(`(?m)^(\s*masters)\s.*$`)
	mesosZK      = regexp.MustCompile(`(?m)^\s*zk\s.*\n`)
	mesosHTTP    = regexp.MustCompile(`(?m)^(\s*http)\s+\S+\s*$`)
)

// forTest adapts a documented Corefile to a test machine: servers listen
// on port 0 of loopback (bound there unless the block binds already), and
// so do prometheus, health and ready; kubeconfig paths point at the test
// API server; forward goes to the test's upstream instead of
// /etc/resolv.conf's, and to its cluster DNS instead of 10.96.0.10.
// mesosschema asks the test's stand-in master, and serves its HTTP
// interface on mesosHTTP. Its zk lines are dropped: no ZooKeeper runs in
// these tests, and the first poll would wait zk_timeout (30 s) for one
// before it asks the masters (the plugin's own tests run a real ZooKeeper,
// internal/zookeeper).
func forTest(block string, env readmeEnv) string {
	s := serverPort.ReplaceAllString(block, "${1}:0${2}")
	s = bareServer.ReplaceAllString(s, "${1}:0${2}")
	if !bindLine.MatchString(s) {
		s = serverBlock.ReplaceAllString(s, "${1}\n    bind 127.0.0.1")
	}
	s = listenAddr.ReplaceAllString(s, "${1} 127.0.0.1:0")
	s = kubeconfig.ReplaceAllString(s, "${1} "+env.kubeconfig)
	if !strings.Contains(s, "kubeconfig") {
		s = openKubeStub.ReplaceAllString(s, "${1}\n        kubeconfig "+env.kubeconfig)
		s = bareKube.ReplaceAllString(s, "${1} {\n        kubeconfig "+env.kubeconfig+"\n    }")
	}
	s = resolvConf.ReplaceAllString(s, "${1}"+env.upstream)
	s = mesosMasters.ReplaceAllString(s, "${1} "+env.mesosMaster)
	s = mesosZK.ReplaceAllString(s, "")
	httpAddr := cmp.Or(env.mesosHTTP, "127.0.0.1:0")
	s = mesosHTTP.ReplaceAllString(s, "${1} "+httpAddr)
	return strings.ReplaceAll(s, "10.96.0.10", env.clusterDNS)
}
