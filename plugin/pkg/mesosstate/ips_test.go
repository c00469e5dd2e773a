package mesosstate

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// addrs parses a space-separated address list; "" gives nil.
func addrs(s string) []netip.Addr {
	var out []netip.Addr
	for f := range strings.FieldsSeq(s) {
		out = append(out, netip.MustParseAddr(f))
	}
	return out
}

func running(ts float64, labels []Label, nets ...NetworkInfo) Status {
	st := Status{State: "TASK_RUNNING", Timestamp: ts, Labels: labels}
	if nets != nil {
		st.ContainerStatus = &ContainerStatus{NetworkInfos: nets}
	}
	return st
}

func netinfo(name string, ips ...string) NetworkInfo {
	ni := NetworkInfo{Name: name}
	for _, ip := range ips {
		ni.IPAddresses = append(ni.IPAddresses, IPAddress{IPAddress: ip})
	}
	return ni
}

func scopedPort(scope, network string) DiscoveryPort {
	p := DiscoveryPort{Number: 80, Name: "http", Protocol: "tcp", Labels: &Labels{}}
	if scope != "" {
		p.Labels.Labels = append(p.Labels.Labels, Label{NetworkScopeLabel, scope})
	}
	if network != "" {
		p.Labels.Labels = append(p.Labels.Labels, Label{NetworkNameLabel, network})
	}
	return p
}

func TestIPs(t *testing.T) {
	agent := netip.MustParseAddr("10.0.0.2")
	docker := []Label{{DockerIPLabel, "172.17.0.3"}}
	mesos := []Label{{MesosIPLabel, "10.8.0.3"}}
	all := []string{"netinfo", "docker", "mesos", "host"}
	for _, tc := range []struct {
		name    string
		task    Task
		sources []string
		want    string
	}{
		{"host only", Task{}, []string{"host"}, "10.0.0.2"},
		{"no status falls to host", Task{}, all, "10.0.0.2"},
		{"netinfo first", Task{Statuses: []Status{running(1, docker, netinfo("", "9.0.0.3"))}}, all, "9.0.0.3"},
		{"docker when netinfo empty", Task{Statuses: []Status{running(1, docker)}}, all, "172.17.0.3"},
		{"docker before netinfo by order", Task{Statuses: []Status{running(1, docker, netinfo("", "9.0.0.3"))}},
			[]string{"docker", "netinfo"}, "172.17.0.3"},
		{"mesos label", Task{Statuses: []Status{running(1, mesos)}}, all, "10.8.0.3"},
		{"dual stack", Task{Statuses: []Status{running(1, nil, netinfo("", "9.0.0.3", "fd00::3"))}}, all, "9.0.0.3 fd00::3"},
		{"ipv6 only", Task{Statuses: []Status{running(1, nil, netinfo("", "2001:db8::3"))}}, all, "2001:db8::3"},
		{"several networks", Task{Statuses: []Status{running(1, nil, netinfo("a", "9.0.0.3"), netinfo("b", "9.1.0.3"))}}, all,
			"9.0.0.3 9.1.0.3"},
		{"old single ip_address", Task{Statuses: []Status{running(1, nil, NetworkInfo{IPAddress: "9.0.0.4"})}}, all, "9.0.0.4"},
		{"bad addresses skipped", Task{Statuses: []Status{running(1, nil,
			netinfo("", "", "999.1.1.1", "0.0.0.0", "::", "fe80::1%eth0", "9.0.0.5", "9.0.0.5", "::ffff:9.0.0.6"))}}, all,
			"9.0.0.5 9.0.0.6"},
		{"only bad addresses fall through", Task{Statuses: []Status{running(1, []Label{{DockerIPLabel, ""}},
			netinfo("", "nonsense"))}}, all, "10.0.0.2"},
		{"latest running status wins", Task{Statuses: []Status{
			running(5, nil, netinfo("", "9.0.0.5")),
			running(9, nil, netinfo("", "9.0.0.9")),
			running(7, nil, netinfo("", "9.0.0.7")),
		}}, all, "9.0.0.9"},
		{"equal timestamps: the later one", Task{Statuses: []Status{
			running(5, nil, netinfo("", "9.0.0.1")), running(5, nil, netinfo("", "9.0.0.2"))}}, all, "9.0.0.2"},
		{"non-running statuses ignored", Task{Statuses: []Status{
			running(5, nil, netinfo("", "9.0.0.5")),
			{State: "TASK_KILLING", Timestamp: 9, ContainerStatus: &ContainerStatus{NetworkInfos: []NetworkInfo{netinfo("", "9.0.0.9")}}},
		}}, all, "9.0.0.5"},
		{"nothing", Task{}, []string{"netinfo", "docker"}, ""},
		{"no agent address", Task{}, []string{"host"}, ""},
		{"unknown source ignored", Task{}, []string{"bogus", "host"}, "10.0.0.2"},
		{"autoip host", Task{Statuses: []Status{running(1, nil, netinfo("dcos", "9.0.0.3"))},
			Discovery: &DiscoveryInfo{Ports: DiscoveryPorts{Ports: []DiscoveryPort{scopedPort("host", "")}}}},
			[]string{"autoip"}, "10.0.0.2"},
		{"autoip container named", Task{Statuses: []Status{running(1, nil, netinfo("dcos", "9.0.0.3"), netinfo("other", "9.9.0.3"))},
			Discovery: &DiscoveryInfo{Ports: DiscoveryPorts{Ports: []DiscoveryPort{scopedPort("", ""), scopedPort("container", "dcos")}}}},
			[]string{"autoip"}, "9.0.0.3"},
		{"autoip container unnamed", Task{Statuses: []Status{running(1, nil, netinfo("dcos", "9.0.0.3"), netinfo("other", "9.9.0.3"))},
			Discovery: &DiscoveryInfo{Ports: DiscoveryPorts{Ports: []DiscoveryPort{scopedPort("container", "")}}}},
			[]string{"autoip"}, "9.0.0.3 9.9.0.3"},
		{"autoip without labels falls through", Task{Statuses: []Status{running(1, nil, netinfo("dcos", "9.0.0.3"))},
			Discovery: &DiscoveryInfo{Ports: DiscoveryPorts{Ports: []DiscoveryPort{{Number: 80}}}}},
			[]string{"autoip", "host"}, "10.0.0.2"},
		{"autoip without discovery", Task{}, []string{"autoip"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := agent
			if tc.name == "no agent address" {
				a = netip.Addr{}
			}
			if got, want := tc.task.IPs(tc.sources, a), addrs(tc.want); !slices.Equal(got, want) {
				t.Errorf("IPs(%v) = %v, want %v", tc.sources, got, want)
			}
		})
	}
}

func TestIPsAgentIPv6(t *testing.T) {
	task := Task{}
	a := netip.MustParseAddr("2001:db8::21")
	if got := task.IPs(DefaultIPSources, a); !slices.Equal(got, []netip.Addr{a}) {
		t.Errorf("IPs = %v", got)
	}
}

func TestCheckIPSources(t *testing.T) {
	for _, ok := range [][]string{DefaultIPSources, ValidIPSources, {"host"}, {"autoip", "host"}} {
		if err := CheckIPSources(ok); err != nil {
			t.Errorf("CheckIPSources(%v) = %v", ok, err)
		}
	}
	for _, bad := range [][]string{nil, {}, {"hosts"}, {"host", "host"}, {"netinfo", "NETINFO"}, {""}} {
		if err := CheckIPSources(bad); !errors.Is(err, ErrIPSource) {
			t.Errorf("CheckIPSources(%v) = %v, want ErrIPSource", bad, err)
		}
	}
}
