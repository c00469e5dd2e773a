package clusterfirst

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// writeFiles lays out files (path → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCgroupCPULimit: the tightest limit of the cgroup and its ancestors
// up to the mount, on v1 (quota over period, -1 none) and v2 (cpu.max,
// "max" none), with a container's view (its own cgroup mounted as /) and a
// host's; none where no limit is set or nothing can be read.
func TestCgroupCPULimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  func(root string) map[string]string
		want   float64
		wantOK bool
	}{
		{"v2, a pod's 300m", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo":              "30 1 0:26 / " + root + "/cg rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
				"proc/cgroup":                 "0::/kubepods/pod1/c1\n",
				"cg/kubepods/pod1/c1/cpu.max": "30000 100000\n",
				"cg/kubepods/pod1/cpu.max":    "max 100000\n",
			}
		}, 0.3, true},
		{"v2, the parent's limit binds", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo":              "30 1 0:26 / " + root + "/cg rw - cgroup2 cgroup2 rw\n",
				"proc/cgroup":                 "0::/kubepods/pod1/c1\n",
				"cg/kubepods/pod1/c1/cpu.max": "max 100000\n",
				"cg/kubepods/pod1/cpu.max":    "50000 100000\n",
			}
		}, 0.5, true},
		{"v2, a container's own cgroup mounted as /", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo": "30 1 0:26 /kubepods/pod1/c1 " + root + "/cg ro - cgroup2 cgroup2 rw\n",
				"proc/cgroup":    "0::/kubepods/pod1/c1\n",
				"cg/cpu.max":     "150000 100000\n",
			}
		}, 1.5, true},
		{"v1 (this machine's kind), with the cpu controller beside cpuacct", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo": "25 24 0:22 / " + root + "/sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n" +
					"26 24 0:23 / " + root + "/sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
				"proc/cgroup": "4:memory:/a\n3:cpu,cpuacct:/a/b\n0::/\n",
				"sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_quota_us":  "-1\n",
				"sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_period_us": "100000\n",
				"sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us":    "50000\n",
				"sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us":   "100000\n",
			}
		}, 0.5, true},
		{"no limit anywhere", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo": "30 1 0:26 / " + root + "/cg rw - cgroup2 cgroup2 rw\n",
				"proc/cgroup":    "0::/a\n",
				"cg/a/cpu.max":   "max 100000\n",
				"cg/cpu.max":     "max 100000\n",
			}
		}, 0, false},
		{"no cgroup mount", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo": "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
				"proc/cgroup":    "0::/a\n",
			}
		}, 0, false},
		{"a cgroup outside the mount", func(root string) map[string]string {
			return map[string]string{
				"proc/mountinfo": "30 1 0:26 /other " + root + "/cg rw - cgroup2 cgroup2 rw\n",
				"proc/cgroup":    "0::/a\n",
				"cg/cpu.max":     "10000 100000\n",
			}
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, tc.files(root))
			got, ok := cgroupCPULimit(filepath.Join(root, "proc"))
			if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("limit %g, %v; want %g, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if _, ok := cgroupCPULimit(filepath.Join(t.TempDir(), "absent")); ok {
		t.Error("a limit read from files that do not exist")
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/end\04`: `/end\04`, `\134x`: `\x`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCPUMeter: the share of the allowed CPU used over the last window,
// 0 until the readings span one, whether the sampler runs every period or
// seldom (it waits to run under overload), and 0 when the clock cannot be
// read.
func TestCPUMeter(t *testing.T) {
	for _, every := range []time.Duration{samplePeriod, 30 * time.Millisecond, 300 * time.Millisecond} {
		m := newCPUMeter()
		var cpu time.Duration
		m.readCPU = func() (time.Duration, error) { return cpu, nil }
		m.readAllowed = func() float64 { return 0.5 } // a 500m limit
		var busy, recent float64
		for now := time.Duration(0); now <= 3*cpuWindow; now += every {
			busy, recent = m.busy(now)
			if now < cpuWindow*9/10 && busy != 0 {
				t.Fatalf("every %v, at %v: busy %g before the readings span a window", every, now, busy)
			}
			cpu += every / 4 // a quarter of a core: half of 500m
		}
		if math.Abs(busy-0.5) > 0.02 {
			t.Errorf("every %v: a quarter core used under a 500m limit: busy %g, want 0.5", every, busy)
		}
		if every < shortWindow && math.Abs(recent-0.5) > 0.02 {
			t.Errorf("every %v: over the short window, busy %g, want 0.5", every, recent)
		}
		m.readCPU = func() (time.Duration, error) { return 0, os.ErrPermission }
		if b, r := m.busy(4 * cpuWindow); b != 0 || r != 0 {
			t.Errorf("unreadable clock: busy %g and %g, want 0", b, r)
		}
	}
}

// TestAllowedCPU: this process's allowance is positive and no more than
// GOMAXPROCS.
func TestAllowedCPU(t *testing.T) {
	a := allowedCPU()
	if a <= 0 || a > float64(runtime.GOMAXPROCS(0)) {
		t.Errorf("allowed CPU %g, want in (0, %d]", a, runtime.GOMAXPROCS(0))
	}
	if _, err := processCPU(); err != nil {
		t.Error(err)
	}
}
