package mesosstate

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParsePID(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want PID
		addr string // "" when the host is not an IP literal
	}{
		{"master@10.0.0.1:5050", PID{"master", "10.0.0.1", 5050}, "10.0.0.1"},
		{"slave(1)@10.0.0.2:5051", PID{"slave(1)", "10.0.0.2", 5051}, "10.0.0.2"},
		{"master@[2001:db8::1]:5050", PID{"master", "2001:db8::1", 5050}, "2001:db8::1"},
		{"master@[::ffff:10.0.0.1]:5050", PID{"master", "::ffff:10.0.0.1", 5050}, "10.0.0.1"},
		{"scheduler-0b7e@m1.example.com:41234", PID{"scheduler-0b7e", "m1.example.com", 41234}, ""},
		{"x@h_1:65535", PID{"x", "h_1", 65535}, ""},
	} {
		got, err := ParsePID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParsePID(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.in {
			t.Errorf("ParsePID(%q).String() = %q", tc.in, got.String())
		}
		a, ok := got.Addr()
		if ok != (tc.addr != "") || ok && a != netip.MustParseAddr(tc.addr) {
			t.Errorf("ParsePID(%q).Addr() = %v, %v; want %q", tc.in, a, ok, tc.addr)
		}
	}
}

func TestParsePIDErrors(t *testing.T) {
	for _, in := range []string{
		"", "master", "@10.0.0.1:5050", "master@", "master@10.0.0.1", "master@10.0.0.1:", "master@:5050",
		"master@10.0.0.1:0", "master@10.0.0.1:65536", "master@10.0.0.1:05050", "master@10.0.0.1:+5050",
		"master@10.0.0.1:50x0", "master@2001:db8::1:5050", "master@[10.0.0.1]:5050", "master@[2001:db8::1:5050",
		"master@[fe80::1%eth0]:5050", "master@[2001:db8::1]]:5050", "mas ter@10.0.0.1:5050", "a@b@10.0.0.1:5050",
		"master@host/x:5050", "master@10.0.0.1:5050 ",
	} {
		if p, err := ParsePID(in); !errors.Is(err, ErrBadPID) {
			t.Errorf("ParsePID(%q) = %+v, %v; want ErrBadPID", in, p, err)
		}
	}
}
