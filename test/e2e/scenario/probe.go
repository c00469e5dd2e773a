package scenario

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/schemadns/schemadns/internal/toolflags"
)

// Sleep sleeps for d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error { return toolflags.SleepCtx(ctx, d) }

// Ask sends one query from the harness.
func Ask(addr, netw, name string, qtype uint16) (*dns.Msg, error) {
	c := &dns.Client{Net: netw, Timeout: 2 * time.Second}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := c.Exchange(m, addr)
	return r, err
}

// Summarize writes an answer (its rcode and records) or the error, for
// the report.
func Summarize(m *dns.Msg, err error) string {
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, rr := range m.Answer {
		parts = append(parts, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	return dns.RcodeToString[m.Rcode] + " " + strings.Join(parts, "; ")
}

// ErrText is an error in parentheses, for a check's detail; "" for none.
func ErrText(err error) string {
	if err == nil {
		return ""
	}
	return "(" + err.Error() + ")"
}

// FirstField is the first word of the first line (getent's address).
func FirstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// MiB writes a size in MiB.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// ScrapeSum fetches a Prometheus text page and sums the samples of metric.
func ScrapeSum(ctx context.Context, url, metric string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total, nil
}
