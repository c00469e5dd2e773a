package mesosschema

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
	"github.com/schemadns/schemadns/plugin/pkg/dnszone"
	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
)

// The Mesos-DNS HTTP interface (its docs/http.md), answered from the
// served snapshot, in Mesos-DNS's JSON shapes:
//
//	GET /v1/version            {"Service": "Mesos-DNS", "URL": ..., "Version": ...}
//	GET /v1/config             the configuration, under Mesos-DNS's names
//	GET /v1/hosts/{host}       [{"host": "<name>.", "ip": "<address>"}, ...]
//	GET /v1/services/{service} [{"service", "host", "ip", "port"}, ...]
//	GET /v1/enumerate          {"frameworks": [{"name", "tasks": [{"name", "id", "records": [...]}]}]}
//
// A name with no records answers one empty entry, as Mesos-DNS does.

// routes are the interface's handlers over m.
func (m *Mesosschema) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/version", m.restVersion)
	mux.HandleFunc("GET /v1/config", m.restConfig)
	mux.HandleFunc("GET /v1/hosts/{host}", m.restHost)
	mux.HandleFunc("GET /v1/hosts/{host}/ports", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "To be implemented...", http.StatusNotImplemented) // as Mesos-DNS
	})
	mux.HandleFunc("GET /v1/services/{service}", m.restService)
	mux.HandleFunc("GET /v1/enumerate", m.restEnumerate)
	return mux
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		log.Debugf("HTTP interface: %v", err)
	}
}

func (m *Mesosschema) restVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]string{
		// Clients check the service name: the API is Mesos-DNS's.
		"Service": "Mesos-DNS",
		"URL":     "https://github.com/schemadns/schemadns",
		"Version": version(),
	})
}

// version is CoreDNS's version in this binary, and this plugin's name.
func version() string {
	v := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/coredns/coredns" {
				v = d.Version
			}
		}
	}
	return "CoreDNS-" + strings.TrimPrefix(v, "v") + " " + pluginName
}

// hostRecord and serviceRecord are Mesos-DNS's answers.
type hostRecord struct {
	Host string `json:"host"`
	IP   string `json:"ip"`
}

type serviceRecord struct {
	Service string `json:"service"`
	Host    string `json:"host"`
	IP      string `json:"ip"`
	Port    string `json:"port"`
}

// lookupName finds the record set of a name the interface is asked
// (Mesos-DNS cleans ".*" out of it and takes it in any case, with or
// without the final dot): its fully qualified lower-case name and facts,
// nil when it has none.
func (m *Mesosschema) lookupName(asked string) (string, *dnszone.Facts) {
	name := strings.ToLower(strings.ReplaceAll(asked, ".*", ""))
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	snap := m.Snapshot()
	zi, restLen := m.ZoneIndex(name)
	if snap == nil || zi < 0 || dnsname.IsReverseZone(m.Zones[zi]) {
		return name, nil
	}
	return name, snap.Service(name[:restLen])
}

func (m *Mesosschema) restHost(w http.ResponseWriter, r *http.Request) {
	name, set := m.lookupName(r.PathValue("host"))
	out := []hostRecord{}
	for _, a := range addrsOf(set) {
		out = append(out, hostRecord{Host: name, IP: a.String()})
	}
	if len(out) == 0 {
		out = append(out, hostRecord{})
	}
	writeJSON(w, out)
}

func (m *Mesosschema) restService(w http.ResponseWriter, r *http.Request) {
	asked := r.PathValue("service")
	_, set := m.lookupName(asked)
	out := []serviceRecord{}
	snap, zone := m.Snapshot(), m.forwardZone()
	for _, s := range srvsOf(set) {
		target := snap.Service(s.Target)
		port := strconv.Itoa(int(s.Port))
		// Each address family's first address, as Mesos-DNS gives.
		for _, a := range firstOfEachFamily(addrsOf(target)) {
			out = append(out, serviceRecord{Service: asked, Host: s.Target + "." + zone, IP: a.String(), Port: port})
		}
	}
	if len(out) == 0 {
		out = append(out, serviceRecord{})
	}
	writeJSON(w, out)
}

func (m *Mesosschema) restEnumerate(w http.ResponseWriter, _ *http.Request) {
	body := m.enumerated()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(body.size))
	if err := body.writeTo(w); err != nil {
		log.Debugf("HTTP interface: %v", err)
	}
}

// enumCache is /v1/enumerate's answer for one state, encoded once and
// shared by every request until the next state: a request costs no
// build and no buffer of its own, and only one answer is held at a time.
type enumCache struct {
	seq  uint64 // the poller's stateSeq the answer was built from
	body chunks
}

// enumerated returns the encoded enumeration of the state kept, building
// it on the first request after a new state. Concurrent first requests
// wait for one build.
func (m *Mesosschema) enumerated() *chunks {
	seq := m.poller.stateSeq.Load()
	if c := m.enum.Load(); c != nil && c.seq == seq {
		return &c.body
	}
	m.enumMu.Lock()
	defer m.enumMu.Unlock()
	// The sequence is read before the state: an answer labelled seq holds
	// that state or a newer one, never an older.
	seq = m.poller.stateSeq.Load()
	if c := m.enum.Load(); c != nil && c.seq == seq {
		return &c.body
	}
	// The last answer goes first: two are never held at once.
	m.enum.Store(nil)
	enum := &enumeration{zone: m.forwardZone()}
	if st := m.poller.state.Load(); st != nil {
		generate(st, &m.gen, enum)
	}
	c := &enumCache{seq: seq, body: enum.finish()}
	m.enum.Store(c)
	return &c.body
}

// mesosDNSConfig is the configuration as Mesos-DNS's /v1/config names it;
// the fields of options that CoreDNS's other plugins hold (resolvers,
// port) are left out, and secrets are not shown.
type mesosDNSConfig struct {
	RefreshSeconds      int
	StateTimeoutSeconds int
	ZkDetectionTimeout  int
	HTTPPort            int `json:"HttpPort"`
	TTL                 uint32
	SOASerial           uint32
	SOARefresh          uint32
	SOARetry            uint32
	SOAExpire           uint32
	SOAMinttl           uint32
	SOAMname            string
	SOARname            string
	Masters             []string
	IPSources           []string
	Zk                  string
	Domain              string
	Listener            string
	HTTPListener        string
	DNSOn               bool `json:"DnsOn"`
	HTTPOn              bool `json:"HttpOn"`
	EnforceRFC952       bool
	EnumerationOn       bool
	MesosHTTPSOn        bool
	CACertFile          string
	MesosCredentials    struct {
		Principal string `json:"principal"`
		Secret    string `json:"secret"`
	}
	IAMConfigFile       string
	MesosAuthentication string
}

func (m *Mesosschema) restConfig(w http.ResponseWriter, _ *http.Request) {
	c := mesosDNSConfig{
		RefreshSeconds:      int(m.refresh / time.Second),
		StateTimeoutSeconds: int(m.master.Timeout / time.Second),
		ZkDetectionTimeout:  int(m.master.ZKTimeout / time.Second),
		TTL:                 m.TTL,
		SOARefresh:          m.SOA.Refresh, SOARetry: m.SOA.Retry, SOAExpire: m.SOA.Expire, SOAMinttl: m.SOA.MinTTL,
		SOAMname: m.SOA.NS, SOARname: m.SOA.Mbox,
		// The zk URL's user:password never shows.
		Masters: m.master.Masters, IPSources: m.gen.ipSources, Zk: mesosmaster.RedactZK(m.master.ZK),
		Domain:        strings.TrimSuffix(m.forwardZone(), "."),
		DNSOn:         true,
		HTTPOn:        true,
		EnforceRFC952: m.gen.rfc952,
		EnumerationOn: true,
		MesosHTTPSOn:  m.master.Scheme == "https",
		CACertFile:    m.master.CAFile,
	}
	if snap := m.Snapshot(); snap != nil {
		c.SOASerial = snap.Serial()
	}
	var listen []string
	for _, a := range m.NSAddrs {
		listen = append(listen, a.String())
	}
	c.Listener = strings.Join(listen, ",")
	if host, port, err := net.SplitHostPort(m.httpAddr); err == nil {
		c.HTTPListener = host
		c.HTTPPort, _ = strconv.Atoi(port)
	}
	switch {
	case m.master.Auth.Basic != nil:
		c.MesosAuthentication = "basic"
		c.MesosCredentials.Principal, c.MesosCredentials.Secret = m.master.Auth.Basic.Principal, "******"
	case m.master.Auth.IAM != nil:
		c.MesosAuthentication, c.IAMConfigFile = "iam", m.master.Auth.IAM.ConfigFile
	}
	writeJSON(w, c)
}

// forwardZone is the first forward zone: the interface's domain.
func (m *Mesosschema) forwardZone() string {
	for _, z := range m.Zones {
		if !dnsname.IsReverseZone(z) {
			return z
		}
	}
	return ""
}

func addrsOf(set *dnszone.Facts) []netip.Addr {
	if set == nil {
		return nil
	}
	out := make([]netip.Addr, set.NumEndpoints())
	for i := range out {
		out[i] = set.EndpointAddr(i)
	}
	return out
}

func srvsOf(set *dnszone.Facts) []dnszone.SRVRecord {
	if set == nil {
		return nil
	}
	return set.SRVs()
}

// firstOfEachFamily is the first IPv4 and the first IPv6 address of addrs.
func firstOfEachFamily(addrs []netip.Addr) []netip.Addr {
	var out []netip.Addr
	if i := slices.IndexFunc(addrs, netip.Addr.Is4); i >= 0 {
		out = append(out, addrs[i])
	}
	if i := slices.IndexFunc(addrs, netip.Addr.Is6); i >= 0 {
		out = append(out, addrs[i])
	}
	return out
}

// enumeration is /v1/enumerate's answer, encoded as generate makes it:
// a task's records are written out when the next task (or framework)
// starts, so that only one task's records are held at a time. The JSON
// is Mesos-DNS's:
//
//	{"frameworks":[{"tasks":[{"name","id","records":[{"name","host","rtype"}]}],"name"}]}
type enumeration struct {
	zone string
	out  chunks
	// open is the framework being written; frameworks counts those begun.
	open       *enumFramework
	frameworks int
}

type enumFramework struct {
	e    *enumeration
	name string
	// open is the task whose records are being collected; tasks counts
	// those written.
	open  *enumTask
	tasks int
}

type enumTask struct {
	zone    string
	Name    string       `json:"name"`
	ID      string       `json:"id"`
	Records []enumRecord `json:"records"`
}

type enumRecord struct {
	Name  string `json:"name"`
	Host  string `json:"host"`
	Rtype string `json:"rtype"`
}

func (e *enumeration) framework(name string) *enumFramework {
	e.closeFramework()
	if e.frameworks == 0 {
		e.out.write([]byte(`{"frameworks":[`))
	} else {
		e.out.write([]byte(","))
	}
	e.frameworks++
	e.out.write([]byte(`{"tasks":[`))
	e.open = &enumFramework{e: e, name: name}
	return e.open
}

func (f *enumFramework) task(name, id string) *enumTask {
	f.flush()
	f.open = &enumTask{zone: f.e.zone, Name: name, ID: id, Records: []enumRecord{}}
	return f.open
}

// flush writes the open task out.
func (f *enumFramework) flush() {
	if f.open == nil {
		return
	}
	if f.tasks > 0 {
		f.e.out.write([]byte(","))
	}
	f.tasks++
	f.e.out.writeJSON(f.open)
	f.open = nil
}

// closeFramework ends the open framework: its last task, its name.
func (e *enumeration) closeFramework() {
	if e.open == nil {
		return
	}
	e.open.flush()
	e.out.write([]byte(`],"name":`))
	e.out.writeJSON(e.open.name)
	e.out.write([]byte("}"))
	e.open = nil
}

// finish ends the answer, with a newline as json.Encoder ends the other
// answers, and returns it.
func (e *enumeration) finish() chunks {
	if e.frameworks == 0 {
		e.out.write([]byte(`{"frameworks":[`))
	}
	e.closeFramework()
	e.out.write([]byte("]}\n"))
	return e.out
}

// chunkSize is the size of an answer's chunks: the most a chunk wastes.
const chunkSize = 256 << 10

// chunks is an answer written in fixed-size chunks: it grows without
// copying, so that building a 20 MB answer holds 20 MB, not the 2 or 3
// times a doubling buffer does.
type chunks struct {
	parts [][]byte
	size  int
}

func (c *chunks) write(p []byte) {
	c.size += len(p)
	for len(p) > 0 {
		if n := len(c.parts); n == 0 || len(c.parts[n-1]) == cap(c.parts[n-1]) {
			c.parts = append(c.parts, make([]byte, 0, chunkSize))
		}
		last := &c.parts[len(c.parts)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
}

// writeJSON writes v, one task or a string: json.Marshal cannot fail on
// them.
func (c *chunks) writeJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		log.Errorf("HTTP interface: /v1/enumerate: %v", err)
		b = []byte("null")
	}
	c.write(b)
}

// writeTo sends the chunks to w.
func (c *chunks) writeTo(w io.Writer) error {
	for _, p := range c.parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// recorder collects the records made for one task.
type recorder interface {
	address(name string, a netip.Addr)
	service(name, target string, port uint16)
}

type nopRecorder struct{}

func (nopRecorder) address(string, netip.Addr)     {}
func (nopRecorder) service(string, string, uint16) {}

func (t *enumTask) address(name string, a netip.Addr) {
	rtype := "A"
	if a.Is6() {
		rtype = "AAAA"
	}
	t.add(enumRecord{Name: name + "." + t.zone, Host: a.String(), Rtype: rtype})
}

func (t *enumTask) service(name, target string, port uint16) {
	t.add(enumRecord{Name: name + "." + t.zone, Host: target + "." + t.zone + ":" + strconv.Itoa(int(port)), Rtype: "SRV"})
}

// add adds r once.
func (t *enumTask) add(r enumRecord) {
	if !slices.Contains(t.Records, r) {
		t.Records = append(t.Records, r)
	}
}

// httpServers are the interface's listeners by address, handed from a
// plugin instance to its successor: a reload starts the new instance
// before it stops the old one, and both cannot listen. The requests go to
// the instance that acquired the address last. Two server blocks of one
// Corefile (one owner, the Corefile's instance) cannot share an address.
var httpServers = struct {
	sync.Mutex
	m map[string]*sharedServer
}{m: map[string]*sharedServer{}}

type sharedServer struct {
	srv     *http.Server
	holders []*httpHandle
	// inFlight holds a token per request being served: a request finding
	// it full is answered 503 at once (see httpLimits.maxInFlight).
	inFlight chan struct{}
}

// httpLimits bound what a client of the interface can hold: the time a
// connection may take to send its headers and its request, to take its
// answer and to sit idle, and the requests served at once.
type httpLimits struct {
	readHeader, read, write, idle time.Duration
	maxInFlight                   int
	maxHeaderBytes                int
}

// defaultHTTPLimits: a request is a GET of a few hundred bytes; the
// largest answer, /v1/enumerate of a 20,000-task cluster (about 10 MB),
// leaves in well under a second on a local network, so 30 s bounds a
// client reading slowly without cutting off a real one. 64 requests at
// once is more than Mesos-DNS's users make, and each costs little.
var defaultHTTPLimits = httpLimits{
	readHeader: 5 * time.Second, read: 10 * time.Second, write: 30 * time.Second, idle: 60 * time.Second,
	maxInFlight: 64, maxHeaderBytes: 16 << 10,
}

// httpHandle is an instance's claim on a listener.
type httpHandle struct {
	addr    string
	handler http.Handler
	// owner is the Corefile's instance the plugin instance belongs to.
	owner any
}

// errHTTPTaken: a server block of the same Corefile serves its HTTP
// interface on the address already.
var errHTTPTaken = errors.New("another server block of this Corefile serves its HTTP interface there")

// listenHTTP serves h on addr for owner, or takes over the listener an
// instance of an older Corefile (a reload's predecessor) has there.
func listenHTTP(addr string, h http.Handler, owner any) (*httpHandle, error) {
	return listenHTTPLimited(addr, h, owner, defaultHTTPLimits)
}

// listenHTTPLimited is listenHTTP with the limits given (for tests); the
// limits of a listener are those of the instance that opened it.
func listenHTTPLimited(addr string, h http.Handler, owner any, lim httpLimits) (*httpHandle, error) {
	httpServers.Lock()
	defer httpServers.Unlock()
	handle := &httpHandle{addr: addr, handler: h, owner: owner}
	if s := httpServers.m[addr]; s != nil {
		if slices.ContainsFunc(s.holders, func(o *httpHandle) bool { return o.owner == owner }) {
			return nil, errHTTPTaken
		}
		s.holders = append(s.holders, handle)
		return handle, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	log.Infof("HTTP interface on %s", ln.Addr())
	s := &sharedServer{holders: []*httpHandle{handle}, inFlight: make(chan struct{}, lim.maxInFlight)}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: lim.readHeader, ReadTimeout: lim.read,
		WriteTimeout: lim.write, IdleTimeout: lim.idle, MaxHeaderBytes: lim.maxHeaderBytes}
	httpServers.m[addr] = s
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Errorf("HTTP interface on %s: %v", addr, err)
		}
	}()
	return handle, nil
}

// serve passes a request to the latest holder's handler, or answers 503
// when maxInFlight requests are being served.
func (s *sharedServer) serve(w http.ResponseWriter, r *http.Request) {
	select {
	case s.inFlight <- struct{}{}:
		defer func() { <-s.inFlight }()
	default:
		metrics.httpRefused.Inc()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many requests at once", http.StatusServiceUnavailable)
		return
	}
	httpServers.Lock()
	var h http.Handler
	if len(s.holders) > 0 {
		h = s.holders[len(s.holders)-1].handler
	}
	httpServers.Unlock()
	if h == nil {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

// release gives up the claim; the listener closes with its last holder.
func (h *httpHandle) release() {
	httpServers.Lock()
	s := httpServers.m[h.addr]
	if s == nil {
		httpServers.Unlock()
		return
	}
	s.holders = slices.DeleteFunc(s.holders, func(o *httpHandle) bool { return o == h })
	last := len(s.holders) == 0
	if last {
		delete(httpServers.m, h.addr)
	}
	httpServers.Unlock()
	if last {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
	}
}
