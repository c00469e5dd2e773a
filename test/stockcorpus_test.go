package test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The drop-in promise, tried the way an operator swapping images tries it:
// every Corefile example of the stock plugins' READMEs (the CoreDNS module
// go.mod requires) is started by our binary and by a stock build of the
// same version. Where stock starts one, ours must too. Each start runs in
// a network namespace of its own with only loopback up, so examples that
// listen on port 53 or forward to public resolvers neither collide nor
// reach out.

// verdict is how a binary took a Corefile.
type verdict string

const (
	started  verdict = "started"  // printed its banner: every server block is up
	rejected verdict = "rejected" // exited before that
	stuck    verdict = "stuck"    // neither, within corpusWait
)

// corpusWait bounds one start; the examples that wait on something absent
// (a backend's API) are stuck for both binaries alike.
const corpusWait = 10 * time.Second

// corpusExample is one Corefile from a README.
type corpusExample struct {
	plugin string // the README's plugin
	n      int    // its number in the README, from 1
	text   string
}

func (e corpusExample) String() string { return fmt.Sprintf("%s #%d", e.plugin, e.n) }

func TestStockREADMECorefilesStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every README example twice")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Fatalf("unshare (util-linux) is needed: %v", err)
	}
	ours, stock := coreDNSBinary(t), stockBinary(t)
	examples := stockExamples(t)
	if len(examples) < 150 {
		t.Fatalf("only %d Corefile examples found in the stock READMEs: the extraction is broken", len(examples))
	}
	type result struct{ stock, ours verdict }
	results := make([]result, len(examples))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // the starts mostly wait: more than the cores
	for i, ex := range examples {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := t.TempDir()
			results[i] = result{stock: startCorefile(t, stock, dir, ex.text), ours: startCorefile(t, ours, dir, ex.text)}
		}()
	}
	wg.Wait()
	counts := map[verdict]int{}
	for i, ex := range examples {
		r := results[i]
		counts[r.stock]++
		if r.stock == started && r.ours != started {
			t.Errorf("%s: stock starts it, ours is %s:\n%s", ex, r.ours, ex.text)
		}
	}
	t.Logf("%d examples: stock %v", len(examples), counts)
	if counts[started] < 50 {
		t.Errorf("stock started only %d of %d examples: the harness, not the binaries, is failing", counts[started], len(examples))
	}
}

// stockBinary builds CoreDNS's own main package, at the version go.mod
// requires, once per test binary.
var stockOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "schemadns-stock")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "coredns")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/coredns/coredns").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build stock coredns: %w\n%s", err, out)
	}
	return bin, nil
})

func stockBinary(t *testing.T) string {
	t.Helper()
	bin, err := stockOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// stockExamples reads the Corefile examples of every stock plugin README.
func stockExamples(t *testing.T) []corpusExample {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns").Output()
	if err != nil {
		t.Fatalf("go list the coredns module: %v", err)
	}
	readmes, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "plugin", "*", "README.md"))
	if err != nil || len(readmes) == 0 {
		t.Fatalf("no stock plugin READMEs: %v", err)
	}
	var all []corpusExample
	for _, path := range readmes {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		plugin := filepath.Base(filepath.Dir(path))
		for i, text := range stockCorefileBlocks(b) {
			all = append(all, corpusExample{plugin: plugin, n: i + 1, text: text})
		}
	}
	return all
}

// serverBlockStart is the first line of a server block: one or more keys
// (zones, with a scheme or port) and a brace. Syntax blocks have
// placeholders in capitals or brackets and do not match.
var serverBlockStart = regexp.MustCompile(`^([a-z0-9.:/_\-]+\s+)*[a-z0-9.:/_\-]+\s*\{$`)

// stockCorefileBlocks are the fenced blocks of a README that are Corefiles:
// those marked `corefile`, and unmarked ones that begin as a server block.
func stockCorefileBlocks(readme []byte) []string {
	var out []string
	var block []string
	in, isCorefile := false, false
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		fence := strings.HasPrefix(line, "~~~") || strings.HasPrefix(line, "```")
		switch {
		case fence && !in:
			in, block = true, nil
			info := strings.TrimSpace(strings.Trim(line, "~`"))
			isCorefile = info == "corefile" || info == ""
		case fence && in:
			in = false
			text := strings.Join(block, "\n") + "\n"
			first := ""
			for _, l := range block {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					first = l
					break
				}
			}
			if isCorefile && serverBlockStart.MatchString(first) {
				out = append(out, text)
			}
		case in:
			block = append(block, line)
		}
	}
	return out
}

// startCorefile starts bin on the Corefile in dir (its working directory)
// inside a network namespace of its own, and tells how it went; the
// process is gone when it returns.
func startCorefile(t *testing.T, bin, dir, corefile string) verdict {
	conf := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(conf, []byte(corefile), 0o644); err != nil {
		t.Error(err)
		return rejected
	}
	ctx, cancel := context.WithTimeout(context.Background(), corpusWait+5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "sh", "-c", `ip link set lo up 2>/dev/null; exec "$0" -conf "$1"`, bin, conf)
	cmd.Dir = dir
	out := &coreDNSProcess{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return rejected
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.After(corpusWait)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			if strings.Contains(out.log(), "CoreDNS-") {
				return started
			}
			return rejected
		case <-tick.C:
			if slices.ContainsFunc(strings.Split(out.log(), "\n"), func(l string) bool { return strings.HasPrefix(l, "CoreDNS-") }) {
				cancel()
				<-exited
				return started
			}
		case <-deadline:
			cancel()
			<-exited
			return stuck
		}
	}
}
