package mesosstate

import (
	"fmt"
	"net/netip"
	"slices"
)

// The IP sources, as Mesos-DNS names them in its IPSources setting. Each
// is a place a task's address may be found; Task.IPs tries them in the
// order configured.
const (
	// IPSourceNetInfo: the addresses in the network_infos of the latest
	// TASK_RUNNING status's container_status (Mesos 0.25 and later).
	IPSourceNetInfo = "netinfo"
	// IPSourceDocker: the Docker.NetworkSettings.IPAddress label of the
	// latest TASK_RUNNING status (Docker executor before Mesos 0.25).
	IPSourceDocker = "docker"
	// IPSourceMesos: the MesosContainerizer.NetworkSettings.IPAddress label
	// of the latest TASK_RUNNING status (old network isolator modules).
	IPSourceMesos = "mesos"
	// IPSourceHost: the address of the agent the task runs on.
	IPSourceHost = "host"
	// IPSourceAuto: decided by the task's DiscoveryInfo, as DC/OS
	// frameworks label ports: the first port with a network-scope label
	// decides. "host" gives the agent's address; "container" gives the
	// netinfo addresses of the network its network-name label names, or
	// of every network when it names none. A task without such a label
	// gets nothing from this source.
	IPSourceAuto = "autoip"
)

// Label keys the sources read.
const (
	DockerIPLabel     = "Docker.NetworkSettings.IPAddress"
	MesosIPLabel      = "MesosContainerizer.NetworkSettings.IPAddress"
	NetworkScopeLabel = "network-scope"
	NetworkNameLabel  = "network-name"
)

// The values of a NetworkScopeLabel.
const (
	networkScopeHost      = "host"
	networkScopeContainer = "container"
)

// ValidIPSources lists every IP source Task.IPs knows.
var ValidIPSources = []string{IPSourceNetInfo, IPSourceDocker, IPSourceMesos, IPSourceHost, IPSourceAuto}

// DefaultIPSources is Mesos-DNS's default order: a container's own address
// first, the agent's last.
var DefaultIPSources = []string{IPSourceNetInfo, IPSourceMesos, IPSourceHost}

// CheckIPSources validates an IP source list from a configuration: not
// empty, every source known, none twice.
func CheckIPSources(sources []string) error {
	if len(sources) == 0 {
		return fmt.Errorf("%w: none given", ErrIPSource)
	}
	for i, s := range sources {
		if !slices.Contains(ValidIPSources, s) {
			return fmt.Errorf("%w: unknown source %q (valid: %v)", ErrIPSource, s, ValidIPSources)
		}
		if slices.Contains(sources[:i], s) {
			return fmt.Errorf("%w: %q given twice", ErrIPSource, s)
		}
	}
	return nil
}

// IPs returns the task's addresses from the first of sources that gives
// any; agentIP is the address of the agent it runs on (invalid if not
// known). Addresses that do not parse, carry a zone or are unspecified are
// skipped; IPv4-mapped IPv6 addresses come back as IPv4; duplicates are
// dropped. IPv4 and IPv6 addresses may come together (a dual-stack
// network). Unknown source names are ignored: CheckIPSources rejects them
// at configuration time.
func (t *Task) IPs(sources []string, agentIP netip.Addr) []netip.Addr {
	st := t.latestRunning()
	for _, src := range sources {
		var ips []netip.Addr
		switch src {
		case IPSourceNetInfo:
			ips = netinfoIPs(st, "")
		case IPSourceDocker:
			ips = labelIPs(st, DockerIPLabel)
		case IPSourceMesos:
			ips = labelIPs(st, MesosIPLabel)
		case IPSourceHost:
			ips = appendAddr(nil, agentIP)
		case IPSourceAuto:
			ips = t.autoIPs(st, agentIP)
		}
		if len(ips) > 0 {
			return ips
		}
	}
	return nil
}

// latestRunning returns the TASK_RUNNING status with the latest timestamp
// (the later in the list on a tie), or nil.
func (t *Task) latestRunning() *Status {
	var latest *Status
	for i := range t.Statuses {
		s := &t.Statuses[i]
		if s.State == taskRunning && (latest == nil || s.Timestamp >= latest.Timestamp) {
			latest = s
		}
	}
	return latest
}

// netinfoIPs returns the addresses in st's network infos, only those of
// the network named network unless it is empty.
func netinfoIPs(st *Status, network string) []netip.Addr {
	if st == nil || st.ContainerStatus == nil {
		return nil
	}
	var ips []netip.Addr
	for _, ni := range st.ContainerStatus.NetworkInfos {
		if network != "" && ni.Name != network {
			continue
		}
		for _, a := range ni.IPAddresses {
			ips = appendParsed(ips, a.IPAddress)
		}
		ips = appendParsed(ips, ni.IPAddress)
	}
	return ips
}

// labelIPs returns the addresses in st's labels with the key key.
func labelIPs(st *Status, key string) []netip.Addr {
	if st == nil {
		return nil
	}
	var ips []netip.Addr
	for _, l := range st.Labels {
		if l.Key == key {
			ips = appendParsed(ips, l.Value)
		}
	}
	return ips
}

// autoIPs implements IPSourceAuto.
func (t *Task) autoIPs(st *Status, agentIP netip.Addr) []netip.Addr {
	if t.Discovery == nil {
		return nil
	}
	for _, p := range t.Discovery.Ports.Ports {
		switch scope, network := p.network(); scope {
		case networkScopeHost:
			return appendAddr(nil, agentIP)
		case networkScopeContainer:
			return netinfoIPs(st, network)
		}
	}
	return nil
}

// network returns the port's network-scope and network-name labels.
func (p *DiscoveryPort) network() (scope, name string) {
	if p.Labels == nil {
		return "", ""
	}
	for _, l := range p.Labels.Labels {
		switch l.Key {
		case NetworkScopeLabel:
			scope = l.Value
		case NetworkNameLabel:
			name = l.Value
		}
	}
	return scope, name
}

// appendParsed appends the address s, if it is a usable one.
func appendParsed(ips []netip.Addr, s string) []netip.Addr {
	if s == "" {
		return ips
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return ips
	}
	return appendAddr(ips, a)
}

// appendAddr appends a unless it is invalid, unspecified, zoned or there.
func appendAddr(ips []netip.Addr, a netip.Addr) []netip.Addr {
	a = a.Unmap()
	if !a.IsValid() || a.IsUnspecified() || a.Zone() != "" || slices.Contains(ips, a) {
		return ips
	}
	return append(ips, a)
}
