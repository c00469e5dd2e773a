package mesosschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/stanza"
)

// maxConfigFile bounds what `config FILE` reads: Mesos-DNS's files are a
// few hundred bytes, and a wrong path (a log, a device) must not be read
// whole.
const maxConfigFile = 1 << 20

// Mesos-DNS's defaults for its HTTP interface, used when the file turns it
// on (or leaves httpon out, which is on there) without saying where.
const (
	mesosDNSHTTPPort     = 8123
	mesosDNSHTTPListener = "127.0.0.1" // Mesos-DNS: 0.0.0.0, see httpAddr
)

// Errors of `config FILE`. None quotes the file's content: a value may be
// a secret.
var (
	errConfigTooLarge = errors.New("larger than 1 MiB: not a Mesos-DNS config.json")
	errConfigNotJSON  = errors.New("not a JSON object")
)

// mesosDNSFile is Mesos-DNS's config.json. encoding/json matches its keys
// to these names without regard to case, as Mesos-DNS's own decoding
// does (the same names, the same tags), and a later key wins over an
// earlier one. A field is nil when the file leaves it out, or gives null
// (which Mesos-DNS ignores too).
type mesosDNSFile struct {
	Zk                  *string
	Masters             []string
	RefreshSeconds      *int
	StateTimeoutSeconds *int
	ZkDetectionTimeout  *int
	TTL                 *int64
	Domain              *string
	IPSources           []string
	EnforceRFC952       *bool

	SOAMname, SOARname                                    *string
	SOASerial, SOARefresh, SOARetry, SOAExpire, SOAMinttl *int64

	HTTPOn        *bool `json:"HttpOn"`
	HTTPPort      *int  `json:"HttpPort"`
	HTTPListener  *string
	EnumerationOn *bool

	MesosHTTPSOn        *bool
	CACertFile          *string
	CertFile, KeyFile   *string
	MesosAuthentication *string
	MesosCredentials    *struct {
		Principal string `json:"principal"`
		Secret    string `json:"secret"`
	}
	IAMConfigFile *string

	// What the Corefile decides, or what is not kept: warned.
	DNSOn                  *bool `json:"DnsOn"`
	Port                   *int
	Listener               *string
	Resolvers              []string
	ZoneResolvers          map[string][]string
	Timeout                *int
	RecurseOn              *bool
	ExternalOn             *bool
	SetTruncateBit         *bool
	SRVRecordDefaultWeight *int
	File                   *string
}

// configFields are the JSON names of mesosDNSFile's fields, for telling
// an unknown key from a known one.
var configFields = func() []string {
	var names []string
	t := reflect.TypeFor[mesosDNSFile]()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Name
		if tag := f.Tag.Get("json"); tag != "" {
			name = tag
		}
		names = append(names, name)
	}
	return names
}()

// fileConfig is a config.json read, with what the stanza around it wrote:
// a field whose stanza option is written is left to the stanza.
type fileConfig struct {
	path string
	f    mesosDNSFile
	// stanza holds the options written beside `config`; zoneArgs the
	// stanza's zones; serverKeys the server block's keys, for warnings.
	stanza     map[string]bool
	zoneArgs   []string
	serverKeys []string
	warnings   []string
}

// readMesosDNSFile reads and decodes path; unknown keys come back, sorted,
// to be warned about (Mesos-DNS ignores them too).
func readMesosDNSFile(path string) (mesosDNSFile, []string, error) {
	var f mesosDNSFile
	fh, err := os.Open(path)
	if err != nil {
		return f, nil, err
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, maxConfigFile+1))
	if err != nil {
		return f, nil, err
	}
	if len(raw) > maxConfigFile {
		return f, nil, errConfigTooLarge
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return f, nil, jsonError(err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, nil, jsonError(err)
	}
	return f, unknownKeys(keys), nil
}

// jsonError describes a decoding error without the value found: a secret
// of the wrong type would otherwise be quoted.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("%w: a syntax error at byte %d", errConfigNotJSON, syntax.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return errConfigNotJSON
	case errors.As(err, &typ):
		return fmt.Errorf("%s: a JSON %s where a %s is wanted", typ.Field, jsonKind(typ.Value), typ.Type)
	}
	return fmt.Errorf("%w: %w", errConfigNotJSON, err)
}

// jsonKind is the kind of an UnmarshalTypeError's value ("number 12" is
// "number"), without the value.
func jsonKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	return kind
}

func unknownKeys(keys map[string]json.RawMessage) []string {
	var unknown []string
	for k := range keys {
		if !slices.ContainsFunc(configFields, func(n string) bool { return strings.EqualFold(n, k) }) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	return unknown
}

// applyConfigFile reads the config.json at cf.path into m, field by field,
// and gathers in cf.warnings one line per field that the Corefile decides
// or that is not kept.
func (m *Mesosschema) applyConfigFile(cf *fileConfig) error {
	f, unknown, err := readMesosDNSFile(cf.path)
	if err != nil {
		return err
	}
	cf.f = f
	if f.DNSOn != nil && !*f.DNSOn {
		// The Corefile's server block answers DNS whatever the file says:
		// a Mesos-DNS serving HTTP alone cannot be made from it.
		return errors.New("dnson false: mesosschema answers DNS in its server block, and cannot serve the HTTP interface alone: remove the field")
	}
	for _, k := range unknown {
		cf.warn("%s: not a field of Mesos-DNS's config.json: ignored, as Mesos-DNS does", k)
	}
	for _, apply := range []func(*Mesosschema) error{
		cf.applyMasters, cf.applyTimers, cf.applyRecords, cf.applySOA,
		cf.applyHTTP, cf.applyTLS, cf.applyAuth,
	} {
		if err := apply(m); err != nil {
			return err
		}
	}
	cf.warnCorefile()
	cf.warnNotKept()
	return nil
}

func (cf *fileConfig) warn(format string, args ...any) {
	cf.warnings = append(cf.warnings, fmt.Sprintf(format, args...))
}

// free reports whether no stanza option of the field is written: the
// stanza's options override the file's.
func (cf *fileConfig) free(options ...string) bool {
	return !slices.ContainsFunc(options, func(o string) bool { return cf.stanza[o] })
}

func (cf *fileConfig) applyMasters(m *Mesosschema) error {
	f := cf.f
	if len(f.Masters) > 0 && cf.free("masters") {
		m.master.Masters = slices.Clone(f.Masters)
		m.gen.masters = m.master.Masters
	}
	if f.Zk != nil && *f.Zk != "" && cf.free("zk") {
		m.master.ZK = *f.Zk
	}
	return nil
}

// applyTimers: refreshSeconds, stateTimeoutSeconds, zkDetectionTimeout.
func (cf *fileConfig) applyTimers(m *Mesosschema) error {
	f := cf.f
	if f.RefreshSeconds != nil && cf.free("refresh") {
		if *f.RefreshSeconds < 1 {
			return fmt.Errorf("refreshSeconds: %d is not a number of seconds of at least 1", *f.RefreshSeconds)
		}
		m.refresh = seconds(*f.RefreshSeconds)
	}
	if f.StateTimeoutSeconds != nil && cf.free("state_timeout") {
		if *f.StateTimeoutSeconds < 1 {
			return fmt.Errorf("stateTimeoutSeconds: %d is not a number of seconds of at least 1", *f.StateTimeoutSeconds)
		}
		m.master.Timeout = seconds(*f.StateTimeoutSeconds)
	}
	if f.ZkDetectionTimeout != nil && cf.free("zk_timeout") {
		switch n := *f.ZkDetectionTimeout; {
		case n < 0:
			return fmt.Errorf("zkDetectionTimeout: %d is a negative number of seconds", n)
		case n == 0:
			// Mesos-DNS's 0 waits for ZooKeeper for ever (and exits when it
			// is late otherwise); here a late ZooKeeper only means the
			// masters are asked, which is safe to keep.
			cf.warn("zkDetectionTimeout 0: no limit is not kept: zk_timeout stays %s, after which the masters are asked", m.master.ZKTimeout)
		default:
			m.master.ZKTimeout = seconds(n)
		}
	}
	return nil
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// applyRecords: ttl, domain, IPSources, EnforceRFC952.
func (cf *fileConfig) applyRecords(m *Mesosschema) error {
	f := cf.f
	if f.TTL != nil && cf.free("ttl") {
		if *f.TTL < 0 || *f.TTL > stanza.MaxTTL {
			return fmt.Errorf("ttl: %d is not a number of seconds from 0 to %d", *f.TTL, stanza.MaxTTL)
		}
		m.TTL = uint32(*f.TTL)
	}
	if f.Domain != nil && len(cf.zoneArgs) == 0 {
		zones, err := stanza.ParseZones([]string{*f.Domain}, nil)
		if err != nil {
			return fmt.Errorf("domain: %w", err)
		}
		m.Zones = zones
	}
	if f.IPSources != nil && cf.free("ip_sources") {
		if err := mesosstate.CheckIPSources(f.IPSources); err != nil {
			return fmt.Errorf("IPSources: %w", err)
		}
		m.gen.ipSources = slices.Clone(f.IPSources)
	}
	if f.EnforceRFC952 != nil && cf.free("enforce_rfc952") {
		m.gen.rfc952 = *f.EnforceRFC952
	}
	return nil
}

// applySOA: the SOA's names and timers. SOASerial is warned about: Mesos-DNS
// replaces it with the time it starts.
func (cf *fileConfig) applySOA(m *Mesosschema) error {
	f := cf.f
	names := []struct {
		field, option string
		value         *string
		to            *string
	}{{"SOAMname", "soa_mname", f.SOAMname, &m.SOA.NS}, {"SOARname", "soa_rname", f.SOARname, &m.SOA.Mbox}}
	for _, n := range names {
		if n.value == nil || !cf.free(n.option) {
			continue
		}
		name, err := soaName(*n.value)
		if err != nil {
			return fmt.Errorf("%s: %w", n.field, err)
		}
		*n.to = name
	}
	timers := []struct {
		field, option string
		value         *int64
		to            *uint32
	}{
		{"SOARefresh", "soa_refresh", f.SOARefresh, &m.SOA.Refresh}, {"SOARetry", "soa_retry", f.SOARetry, &m.SOA.Retry},
		{"SOAExpire", "soa_expire", f.SOAExpire, &m.SOA.Expire}, {"SOAMinttl", "soa_minttl", f.SOAMinttl, &m.SOA.MinTTL},
	}
	for _, t := range timers {
		if t.value == nil || !cf.free(t.option) {
			continue
		}
		if *t.value < 1 || *t.value > 1<<32-1 {
			return fmt.Errorf("%s: %d is not a number of seconds above 0", t.field, *t.value)
		}
		*t.to = uint32(*t.value)
	}
	if f.SOASerial != nil {
		cf.warn("SOASerial: not kept, as in Mesos-DNS (which sets it to its start time): the serial changes when a record does")
	}
	return nil
}

// applyHTTP: httpon, httpport, HTTPListener and EnumerationOn, all
// overridden by the stanza's http.
func (cf *fileConfig) applyHTTP(m *Mesosschema) error {
	f := cf.f
	if !cf.free("http") {
		return nil
	}
	on := f.HTTPOn == nil || *f.HTTPOn // Mesos-DNS's default: on
	if !on {
		m.httpAddr, m.keepState = "", false
		return nil
	}
	if f.EnumerationOn != nil && !*f.EnumerationOn {
		return errors.New("EnumerationOn false: /v1/enumerate cannot be turned off while the HTTP interface is on (httpon false turns the interface off)")
	}
	addr, err := cf.httpAddr()
	if err != nil {
		return err
	}
	m.httpAddr, m.keepState = addr, true
	return nil
}

// httpAddr is where the file's HTTP interface listens. Without an
// HTTPListener it listens on 127.0.0.1, not on Mesos-DNS's 0.0.0.0: the
// interface has no authentication, and /v1/enumerate lists the cluster.
func (cf *fileConfig) httpAddr() (string, error) {
	f := cf.f
	port := mesosDNSHTTPPort
	if f.HTTPPort != nil {
		port = *f.HTTPPort
	}
	host := mesosDNSHTTPListener
	if f.HTTPListener != nil && *f.HTTPListener != "" {
		host = *f.HTTPListener
	} else {
		cf.warn("HTTPListener: not set: the HTTP interface listens on 127.0.0.1:%d, not on Mesos-DNS's 0.0.0.0 (it has no authentication); "+
			"set HTTPListener, or mesosschema's http option, to listen elsewhere", port)
	}
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("httpport: %d is not a port from 1 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "", fmt.Errorf("HTTPListener %q: not an IP address to listen on", host)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// applyTLS: MesosHTTPSOn and CACertFile, overridden by the stanza's tls.
// A client certificate (CertFile, KeyFile) cannot be presented, and the
// masters that ask for one would refuse every poll: refused here.
func (cf *fileConfig) applyTLS(m *Mesosschema) error {
	f := cf.f
	for _, p := range []struct {
		field string
		value *string
	}{{"CertFile", f.CertFile}, {"KeyFile", f.KeyFile}} {
		if p.value != nil && *p.value != "" {
			return fmt.Errorf("%s: client certificates for the masters are not supported: remove it, and authenticate with mesosAuthentication basic or iam", p.field)
		}
	}
	if !cf.free("tls") {
		return nil
	}
	https := f.MesosHTTPSOn != nil && *f.MesosHTTPSOn
	if https {
		m.master.Scheme = "https"
	}
	if f.CACertFile != nil && *f.CACertFile != "" {
		if !https {
			cf.warn("CACertFile: not used: MesosHTTPSOn is not true, the masters are asked over http")
			return nil
		}
		m.master.CAFile = *f.CACertFile
	}
	return nil
}

// applyAuth: mesosAuthentication with mesosCredentials or IAMConfigFile,
// overridden by the stanza's basic_auth, basic_auth_file and iam. No
// message quotes the credentials.
func (cf *fileConfig) applyAuth(m *Mesosschema) error {
	f := cf.f
	if !cf.free("basic_auth", "basic_auth_file", "iam") {
		return nil
	}
	mech := ""
	if f.MesosAuthentication != nil {
		mech = *f.MesosAuthentication
	}
	cf.warnUnusedCredentials(mech)
	switch mech {
	case "":
	case "basic":
		c := f.MesosCredentials
		if c == nil || c.Principal == "" || c.Secret == "" {
			return errors.New("mesosCredentials: mesosAuthentication basic needs a principal and a secret")
		}
		m.master.Auth.Basic = &mesosmaster.BasicAuth{Principal: c.Principal, Secret: c.Secret}
	case "iam":
		if f.IAMConfigFile == nil || *f.IAMConfigFile == "" {
			return errors.New("IAMConfigFile: mesosAuthentication iam needs the service account's file")
		}
		m.master.Auth.IAM = &mesosmaster.IAMAuth{ConfigFile: *f.IAMConfigFile}
	default:
		return fmt.Errorf("mesosAuthentication %q: want \"\", basic or iam", mech)
	}
	return nil
}

// warnUnusedCredentials: credentials of another mechanism than
// mesosAuthentication's are not sent, as in Mesos-DNS, which warns too.
func (cf *fileConfig) warnUnusedCredentials(mech string) {
	if c := cf.f.MesosCredentials; c != nil && c.Principal != "" && mech != "basic" {
		cf.warn("mesosCredentials: not sent: mesosAuthentication is not basic")
	}
	if p := cf.f.IAMConfigFile; p != nil && *p != "" && mech != "iam" {
		cf.warn("IAMConfigFile: not used: mesosAuthentication is not iam")
	}
}

// warnCorefile warns about each field whose job is another Corefile line's,
// naming the line.
func (cf *fileConfig) warnCorefile() {
	f := cf.f
	if f.DNSOn != nil {
		cf.warn("dnson: the server block decides: it serves DNS")
	}
	if f.Port != nil {
		cf.warn("port %d: the server block's port decides (%s)", *f.Port, cf.serverBlock())
	}
	if f.Listener != nil {
		cf.warn("listener %s: use bind: the server block listens where bind says (all addresses without it)", *f.Listener)
	}
	if f.Resolvers != nil {
		cf.warn("resolvers: use forward . %s after mesosschema", strings.Join(f.Resolvers, " "))
	}
	if len(f.ZoneResolvers) > 0 {
		cf.warn("zoneResolvers: use a server block per zone with its forward (%s)", zoneForwards(f.ZoneResolvers))
	}
	if f.Timeout != nil {
		cf.warn("timeout %d: forward decides the timeouts of forwarded queries", *f.Timeout)
	}
	if f.ExternalOn != nil {
		cf.warn("externalon %t: forward decides: names outside the zone go to the plugins after mesosschema (none answers them without forward)", *f.ExternalOn)
	}
	if f.RecurseOn != nil {
		cf.warn("recurseOn %t: forward decides: the zone's answers do not set RA, forwarded answers carry the upstream's", *f.RecurseOn)
	}
}

// serverBlock names the server block's keys, or says none is known (a
// test controller).
func (cf *fileConfig) serverBlock() string {
	if len(cf.serverKeys) == 0 {
		return "the server block's key"
	}
	keys := make([]string, len(cf.serverKeys))
	for i, k := range cf.serverKeys {
		keys[i] = strings.TrimPrefix(k, "dns://") // as the Corefile writes it
	}
	return strings.Join(keys, " ")
}

// zoneForwards writes zoneResolvers as Corefile lines, zones sorted.
func zoneForwards(zr map[string][]string) string {
	zones := make([]string, 0, len(zr))
	for z := range zr {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	parts := make([]string, 0, len(zones))
	for _, z := range zones {
		parts = append(parts, fmt.Sprintf("%s { forward . %s }", z, strings.Join(zr[z], " ")))
	}
	return strings.Join(parts, "; ")
}

// warnNotKept warns about fields whose behaviour the plugin does not
// offer, where the difference is safe.
func (cf *fileConfig) warnNotKept() {
	f := cf.f
	if f.SetTruncateBit != nil && !*f.SetTruncateBit {
		cf.warn("SetTruncateBit false: not kept: replies too large for UDP always carry TC, as RFC 1035 asks")
	}
	if f.SRVRecordDefaultWeight != nil {
		cf.warn("srvRecordDefaultWeight %d: not kept: every SRV record has weight 0, and equal weights share the load alike", *f.SRVRecordDefaultWeight)
	}
	if f.File != nil {
		cf.warn("File: ignored: Mesos-DNS sets it itself to the file's path")
	}
}
