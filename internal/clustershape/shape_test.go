package clustershape

import (
	"reflect"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
)

func mustLayout(t *testing.T, s Shape) *Layout {
	t.Helper()
	l, err := s.Layout()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestS5Counts holds S5 at the thresholds: the counts per namespace and
// the exact mix.
func TestS5Counts(t *testing.T) {
	l := mustLayout(t, S5())
	c := l.Counts()
	want := Counts{Namespaces: 50, Services: 10000, ClusterIP: 8900, Headless: 1000, ExternalName: 100, DualStack: 500, Large: 100, Pods: 150000}
	got := c
	got.Endpoints, got.Slices, got.PodsBacking = 0, 0, 0
	if got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	perNS := map[string]int{}
	for i := range c.Services {
		perNS[l.Service(i).Namespace]++
	}
	if perNS["s5-00"] != ThresholdServicesPerNamespace {
		t.Errorf("first namespace holds %d services, want %d", perNS["s5-00"], ThresholdServicesPerNamespace)
	}
	for ns, n := range perNS {
		if ns != "s5-00" && (n < 102 || n > 103) {
			t.Errorf("namespace %s holds %d services, want 5000/49 evenly", ns, n)
		}
	}
	if len(perNS) != 50 {
		t.Errorf("services in %d namespaces, want 50", len(perNS))
	}
	// 9,900 services of 10 to 20 endpoints, 100 of 250, dual-stack ones twice.
	if c.Endpoints < 9900*10+100*250 || c.Endpoints > (9900*20+100*250)*105/100 {
		t.Errorf("%d endpoints, out of range", c.Endpoints)
	}
	t.Log(l.Describe())
}

// TestLayoutConsistent walks every object of a scaled S5: slices within
// the controller's size, addresses unique per family, every endpoint's pod
// present with that address, headless endpoints named after their pods.
func TestLayoutConsistent(t *testing.T) {
	for _, scale := range []float64{1, 0.1, 0.013} {
		l := mustLayout(t, S5().Scaled(scale))
		c := l.Counts()
		pods := map[string]map[string]bool{} // namespace/name → its addresses
		for i := range c.Pods {
			p := l.Pod(i)
			key := p.Namespace + "/" + p.Name
			if pods[key] != nil {
				t.Fatalf("scale %g: pod %s twice", scale, key)
			}
			pods[key] = map[string]bool{}
			for _, ip := range p.Status.PodIPs {
				pods[key][ip.IP] = true
			}
			if p.Spec.SchedulerName != S5().SchedulerName || p.Spec.NodeName != "" {
				t.Fatalf("pod %s would be scheduled", key)
			}
		}
		seen := map[string]bool{}
		endpoints, slices, backing := 0, 0, 0
		for i := range c.Services {
			svc := l.Service(i)
			for _, sl := range l.Slices(i) {
				slices++
				if len(sl.Endpoints) == 0 || len(sl.Endpoints) > MaxEndpointsPerSlice {
					t.Fatalf("slice %s has %d endpoints", sl.Name, len(sl.Endpoints))
				}
				if sl.Labels[discoveryv1.LabelServiceName] != svc.Name || sl.Namespace != svc.Namespace {
					t.Fatalf("slice %s/%s is not labelled for %s/%s", sl.Namespace, sl.Name, svc.Namespace, svc.Name)
				}
				for _, ep := range sl.Endpoints {
					endpoints++
					addr := ep.Addresses[0]
					if seen[addr] {
						t.Fatalf("address %s twice", addr)
					}
					seen[addr] = true
					if (sl.AddressType == discoveryv1.AddressTypeIPv6) != strings.Contains(addr, ":") {
						t.Fatalf("slice %s (%s) holds %s", sl.Name, sl.AddressType, addr)
					}
					if ep.TargetRef != nil {
						key := ep.TargetRef.Namespace + "/" + ep.TargetRef.Name
						if !pods[key][addr] {
							t.Fatalf("endpoint %s of %s names pod %s, which lacks that address", addr, sl.Name, key)
						}
						if sl.AddressType == discoveryv1.AddressTypeIPv4 {
							backing++
						}
					}
					if (svc.Spec.ClusterIP == "None") != (ep.Hostname != nil) {
						t.Fatalf("endpoint %s of %s: hostname %v", addr, sl.Name, ep.Hostname)
					}
					if ep.Hostname != nil && ep.TargetRef != nil && *ep.Hostname != ep.TargetRef.Name {
						t.Fatalf("endpoint %s: hostname %s, pod %s", addr, *ep.Hostname, ep.TargetRef.Name)
					}
				}
			}
		}
		if endpoints != c.Endpoints || slices != c.Slices || backing != c.PodsBacking {
			t.Errorf("scale %g: walked %d endpoints, %d slices, %d pods backing; counts say %d, %d, %d",
				scale, endpoints, slices, backing, c.Endpoints, c.Slices, c.PodsBacking)
		}
	}
}

// TestDeterministic: the same shape gives the same objects, another seed
// others.
func TestDeterministic(t *testing.T) {
	s := S5().Scaled(0.05)
	a, b := mustLayout(t, s), mustLayout(t, s)
	s.Seed++
	other := mustLayout(t, s)
	differs := false
	for i := range a.Counts().Services {
		if !reflect.DeepEqual(a.Service(i), b.Service(i)) || !reflect.DeepEqual(a.Slices(i), b.Slices(i)) {
			t.Fatalf("service %d differs between two layouts of one shape", i)
		}
		differs = differs || !reflect.DeepEqual(a.Slices(i), other.Slices(i))
	}
	for i := 0; i < a.Counts().Pods; i += 97 {
		if !reflect.DeepEqual(a.Pod(i), b.Pod(i)) {
			t.Fatalf("pod %d differs between two layouts of one shape", i)
		}
	}
	if !differs {
		t.Error("another seed gave the same slices")
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*Shape)
		want   string
	}{
		{"one namespace too full", func(s *Shape) { s.MaxServicesPerNamespace = 100 }, "more than 100 in one"},
		{"more in one than in all", func(s *Shape) { s.MaxServicesPerNamespace = s.Services + 1 }, "max services per namespace"},
		{"shares over 1", func(s *Shape) { s.Headless, s.ExternalName = 0.6, 0.5 }, "add up to more than 1"},
		{"scheduled", func(s *Shape) { s.SchedulerName = "" }, "no scheduler name"},
		{"endpoints", func(s *Shape) { s.MinEndpoints = 30 }, "endpoints 30 to 20"},
	} {
		s := S5()
		c.change(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if err := S5().Validate(); err != nil {
		t.Errorf("S5: %v", err)
	}
}
