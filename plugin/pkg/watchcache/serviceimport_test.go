package watchcache

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"
	mcsv1beta1 "sigs.k8s.io/mcs-api/pkg/apis/v1beta1"
)

// TestServiceImportVersions: both API versions convert to the same
// version-neutral import, ipFamilies and trafficDistribution included.
func TestServiceImportVersions(t *testing.T) {
	preferClose, sameZone := "PreferClose", "PreferSameZone"
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "db"}
	for _, tc := range []struct {
		obj  runtime.Object
		want ServiceImport
	}{
		{&mcsv1beta1.ServiceImport{ObjectMeta: meta, Spec: mcsv1beta1.ServiceImportSpec{
			Type: mcsv1beta1.Headless, IPFamilies: []corev1.IPFamily{corev1.IPv6Protocol}, TrafficDistribution: &preferClose,
			Ports: []mcsv1beta1.ServicePort{{Name: "PG", Protocol: corev1.ProtocolTCP, Port: 5432}}}},
			ServiceImport{Headless: true, families: familyIPv6, PreferClose: true, Ports: []Port{{"pg", "tcp", 5432}}}},
		{&mcsv1alpha1.ServiceImport{ObjectMeta: meta, Spec: mcsv1alpha1.ServiceImportSpec{
			Type: mcsv1alpha1.ClusterSetIP, IPs: []string{"10.0.0.1", "fd00::1"}, TrafficDistribution: &sameZone,
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol},
			Ports:      []mcsv1alpha1.ServicePort{{Name: "http", Port: 80}}}},
			ServiceImport{IPs: []netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")}, families: familyIPv4 | familyIPv6,
				Ports: []Port{{"http", "", 80}}}},
	} {
		got, err := Convert(tc.obj)
		if err != nil {
			t.Fatal(err)
		}
		imp, ok := got.(*ServiceImport)
		if !ok || imp.Key() != "ns/db" || imp.Headless != tc.want.Headless || imp.families != tc.want.families ||
			imp.PreferClose != tc.want.PreferClose || !slices.Equal(imp.IPs, tc.want.IPs) || !slices.Equal(imp.Ports, tc.want.Ports) {
			t.Errorf("%T: got %+v, want %+v", tc.obj, got, tc.want)
		}
	}
}

func TestServesFamilyOf(t *testing.T) {
	v4, v6 := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("fd00::1")
	for _, tc := range []struct {
		f        ipFamilies
		ok4, ok6 bool
	}{{0, true, true}, {familyIPv4, true, false}, {familyIPv6, false, true}, {familyIPv4 | familyIPv6, true, true}} {
		imp := &ServiceImport{families: tc.f}
		if imp.ServesFamilyOf(v4) != tc.ok4 || imp.ServesFamilyOf(v6) != tc.ok6 {
			t.Errorf("%b: serves IPv4 %t, IPv6 %t; want %t, %t", tc.f, imp.ServesFamilyOf(v4), imp.ServesFamilyOf(v6), tc.ok4, tc.ok6)
		}
	}
}
