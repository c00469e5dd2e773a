package mesosmaster

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string // in the error; none: valid
	}{
		{"masters", Config{Masters: []string{"m1:5050", "[::1]:5050"}}, nil},
		{"zk", Config{ZK: "zk://z1:2181,z2/mesos"}, nil},
		{"everything", Config{
			Masters: []string{"m1:5050"}, ZK: "zk://u:p@z1:2181/mesos", Scheme: "https",
			Timeout: time.Second, ZKTimeout: time.Second, MaxBodySize: 1,
			Auth: Auth{Basic: &BasicAuth{Principal: "p"}},
		}, nil},
		{"nothing", Config{}, []string{"no masters and no zk"}},
		{"bad masters", Config{Masters: []string{"m1", "m2:http", ":5050", "m3:0"}}, []string{
			`master "m1": address m1: missing port`, `master "m2:http": bad port`, `master ":5050": no host`, `master "m3:0": bad port`,
		}},
		{"scheme", Config{Masters: []string{"m:1"}, Scheme: "ftp"}, []string{`scheme "ftp"`}},
		{"negative", Config{Masters: []string{"m:1"}, Timeout: -1}, []string{"negative"}},
		{"two auths", Config{Masters: []string{"m:1"}, Auth: Auth{Basic: &BasicAuth{Principal: "p"}, IAM: &IAMAuth{ConfigFile: "f"}}}, []string{"exclusive"}},
		{"no principal", Config{Masters: []string{"m:1"}, Auth: Auth{Basic: &BasicAuth{Secret: "s"}}}, []string{"no principal"}},
		{"no iam file", Config{Masters: []string{"m:1"}, Auth: Auth{IAM: &IAMAuth{}}}, []string{"no config file"}},
		{"bad zk and master", Config{Masters: []string{"m"}, ZK: "http://z/mesos"}, []string{`master "m"`, "want zk://"}},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: valid, want errors %q", tt.name, tt.want)
			continue
		}
		mustContainAll(t, tt.name, err.Error(), tt.want...)
	}
}

func TestParseZK(t *testing.T) {
	tests := []struct {
		in   string
		want zkURL
		err  string
	}{
		{in: "zk://z1:2181/mesos", want: zkURL{servers: []string{"z1:2181"}, path: "/mesos"}},
		{in: "zk://z1:2181,z2:2182,z3/a/b/", want: zkURL{servers: []string{"z1:2181", "z2:2182", "z3:2181"}, path: "/a/b"}},
		{in: "zk://user:pa@ss@10.0.0.1:2181/mesos", want: zkURL{servers: []string{"10.0.0.1:2181"}, path: "/mesos", auth: "user:pa@ss"}},
		{in: "zk://[::1]:2181,[::2]/mesos", want: zkURL{servers: []string{"[::1]:2181", "[::2]:2181"}, path: "/mesos"}},
		{in: "z1:2181/mesos", err: "want zk://"},
		{in: "zk://z1:2181", err: "no znode path"},
		{in: "zk://z1:2181/", err: "no znode path"},
		{in: "zk://z1:2181,,z2/mesos", err: "no host"},
		{in: "zk://secret@z1/mesos", err: "user:pass"},
	}
	for _, tt := range tests {
		got, err := parseZK(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %v, want an error with %q", tt.in, err, tt.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error shows the credentials: %v", tt.in, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.in, err)
		case !slices.Equal(got.servers, tt.want.servers) || got.path != tt.want.path || got.auth != tt.want.auth:
			t.Errorf("%s = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestMasterAddress(t *testing.T) {
	tests := []struct {
		json, want, err string
	}{
		{json: `{"address":{"hostname":"m1","ip":"10.0.0.1","port":5050},"hostname":"m1","ip":16777226,"pid":"master@10.0.0.9:5050","port":5050}`, want: "10.0.0.1:5050"},
		{json: `{"address":{"ip":"fd00::1","port":5050}}`, want: "[fd00::1]:5050"},
		{json: `{"address":{"ip":"10.0.0.1"},"port":5051}`, want: "10.0.0.1:5051"},
		{json: `{"pid":"master@10.0.0.2:5050","ip":33554442,"port":5050}`, want: "10.0.0.2:5050"},
		{json: `{"hostname":"m3","port":5050,"pid":"master@bad"}`, want: "m3:5050"},
		{json: `{"hostname":"m3"}`, err: "no address"},
		{json: `not json`, err: "MasterInfo"},
	}
	for _, tt := range tests {
		got, err := masterAddress([]byte(tt.json))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %q, %v; want an error with %q", tt.json, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: %q, %v; want %q", tt.json, got, err, tt.want)
		}
	}
}

// TestStaticHosts: the servers in turn, with a pause each time all were
// tried in vain, as the library's own provider does.
func TestStaticHosts(t *testing.T) {
	h := &staticHosts{}
	if err := h.Init([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	next := func(n int) {
		for range n {
			s, retry := h.Next()
			if retry {
				s += "!"
			}
			got = append(got, s)
		}
	}
	next(5)
	h.Connected() // to a, the last returned
	next(3)
	if want := []string{"a", "b", "a!", "b", "a!", "b", "a!", "b"}; !slices.Equal(got, want) {
		t.Errorf("Next = %v, want %v", got, want)
	}
}
