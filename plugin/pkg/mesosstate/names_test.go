package mesosstate

import (
	"strings"
	"testing"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

func TestTaskLabel(t *testing.T) {
	for _, tc := range []struct {
		in, want1123, want952 string
	}{
		{"search", "search", "search"},
		{"apiserver.myservice", "apiserver-myservice", "apiserver-myservice"},
		{"Web_Frontend", "web-frontend", "web-frontend"},
		{"my task 1", "mytask1", "mytask1"},
		{"Worker_1", "worker-1", "worker-1"},
		{"café-münchen", "caf-mnchen", "caf-mnchen"},
		{"日本語", "", ""},
		{"!!!", "", ""},
		{"", "", ""},
		{"-.-_", "", ""},
		{"..a..", "a", "a"},
		{"_search_", "search", "search"},
		{"123abc", "123abc", "abc"},
		{"9-lives", "9-lives", "lives"},
		{"a/b:c@d", "abcd", "abcd"},
		{"kafka-broker-0.prod.eu", "kafka-broker-0-prod-eu", "kafka-broker-0-prod-eu"},
		{strings.Repeat("x", 70), strings.Repeat("x", 63), strings.Repeat("x", 24)},
		{strings.Repeat("ab-", 30), strings.Repeat("ab-", 20) + "ab", "ab-ab-ab-ab-ab-ab-ab-ab"},
		{"very-long-service-name-for-rfc952", "very-long-service-name-for-rfc952", "very-long-service-name-f"},
	} {
		if got := TaskLabel(tc.in, false); got != tc.want1123 {
			t.Errorf("TaskLabel(%q, false) = %q, want %q", tc.in, got, tc.want1123)
		}
		if got := TaskLabel(tc.in, true); got != tc.want952 {
			t.Errorf("TaskLabel(%q, true) = %q, want %q", tc.in, got, tc.want952)
		}
		for _, got := range []string{TaskLabel(tc.in, false), TaskLabel(tc.in, true)} {
			if got != "" && !dnsname.IsLabel(got) {
				t.Errorf("TaskLabel(%q) = %q, not a label", tc.in, got)
			}
		}
	}
}

func TestFrameworkName(t *testing.T) {
	for _, tc := range []struct {
		in, want1123, want952 string
	}{
		{"marathon", "marathon", "marathon"},
		{"marathon.prod", "marathon.prod", "marathon.prod"},
		{"My Framework", "myframework", "myframework"},
		{"Marathon.PROD", "marathon.prod", "marathon.prod"},
		{"marathon-0.7.5", "marathon-0.7.5", "marathon-0"},
		{"..a..b..", "a.b", "a.b"},
		{"spark_streaming.team-1", "spark-streaming.team-1", "spark-streaming.team-1"},
		{"日本.語", "", ""},
		{"", "", ""},
		{".", "", ""},
		{"x." + strings.Repeat("y", 64), "x." + strings.Repeat("y", 63), "x." + strings.Repeat("y", 24)},
	} {
		if got := FrameworkName(tc.in, false); got != tc.want1123 {
			t.Errorf("FrameworkName(%q, false) = %q, want %q", tc.in, got, tc.want1123)
		}
		if got := FrameworkName(tc.in, true); got != tc.want952 {
			t.Errorf("FrameworkName(%q, true) = %q, want %q", tc.in, got, tc.want952)
		}
	}
}

func TestLabelsDoNotAllocateWhenClean(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		_ = TaskLabel("search", false)
		_ = FrameworkName("marathon.prod", false)
	}); n != 0 {
		t.Errorf("%v allocations for names already clean", n)
	}
}

// TestInstanceLabel pins values computed apart from this code: SHA-1 by
// Python's hashlib, then RFC 4648 base 32 with its alphabet swapped for
// z-base-32's (the same 5-bit grouping, most significant bit first).
func TestInstanceLabel(t *testing.T) {
	const agent = "2d5f9e3a-7c41-4b8e-9f02-6a1c3b5d7e90-S1"
	for _, tc := range []struct {
		task, id, slave, want string
	}{
		{"search", "search.3b6f2a8c-5d1e-11ee-9a4f-0242ac110002", agent, "search-cwptj-s1"},
		{"web", "web.7c1d9e22-5d1e-11ee-9a4f-0242ac110002", "20151015-181002-16777343-5050-13456-S4", "web-r3tkw-s4"},
		{"nirvana", "nirvana.1a2b", "S12", "nirvana-yze5b-s12"},
		{"a", "a", "", "a-o556e"},
		{"x", "", "agent-x!y", "x-5eh48-xy"},
		{"", "a", agent, "o556e-s1"},
		{strings.Repeat("t", 63), "a", agent, strings.Repeat("t", 54) + "-o556e-s1"},
		{strings.Repeat("t", 53) + "-u", "a", agent, strings.Repeat("t", 53) + "-o556e-s1"},
	} {
		got := InstanceLabel(tc.task, tc.id, tc.slave)
		if got != tc.want {
			t.Errorf("InstanceLabel(%q, %q, %q) = %q, want %q", tc.task, tc.id, tc.slave, got, tc.want)
		}
		if !dnsname.IsLabel(got) {
			t.Errorf("InstanceLabel(%q, %q, %q) = %q, not a label", tc.task, tc.id, tc.slave, got)
		}
	}
	if got := InstanceLabel("t", "a", "S"+strings.Repeat("9", 80)); len(got) > 63 || !strings.HasPrefix(got, "o556e-s999") {
		t.Errorf("huge agent ID: %q", got)
	}
}

// TestVerbatimName: the DiscoveryInfo names Mesos-DNS answers as written
// are those a lower-case question can reach.
func TestVerbatimName(t *testing.T) {
	for in, want := range map[string]string{
		"big.dog":                      "big.dog",
		"db_main":                      "db_main",
		"a-rather-long.group":          "a-rather-long.group",
		"9lives.cats":                  "9lives.cats", // EnforceRFC952 does not touch it
		"search":                       "search",
		"Big.Cat":                      "",
		"my app.v2":                    "",
		"big..dog":                     "",
		".big":                         "",
		"big.":                         "",
		"café.x":                       "",
		"":                             "",
		strings.Repeat("x", 64) + ".y": "",
		strings.Repeat("x", 63) + ".y": strings.Repeat("x", 63) + ".y",
	} {
		if got := VerbatimName(in); got != want {
			t.Errorf("VerbatimName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestInstanceSuffix: the part after the task's name in an instance's
// label.
func TestInstanceSuffix(t *testing.T) {
	suffix := InstanceSuffix("test", "20150525-034430-1-S4")
	if suffix != "iffe9-s4" {
		t.Errorf("InstanceSuffix = %q, want iffe9-s4 (Mesos-DNS's hash of \"test\")", suffix)
	}
	if got := InstanceLabel("web", "test", "20150525-034430-1-S4"); got != "web-"+suffix {
		t.Errorf("InstanceLabel = %q, want web-%s", got, suffix)
	}
}
