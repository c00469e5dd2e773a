package server

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Metric returns the samples of a metric family whose lines contain every
// one of labels, from the prometheus plugin; none when the family is
// absent.
func (s *Server) Metric(name string, labels ...string) ([]float64, error) {
	var out []float64
	err := s.samples(name, func(line string, v float64) {
		if containsAll(line, labels) {
			out = append(out, v)
		}
	})
	return out, err
}

// MetricByLabel returns the samples of a metric family by the value of
// one of their labels.
func (s *Server) MetricByLabel(name, label string) (map[string]float64, error) {
	out := map[string]float64{}
	err := s.samples(name, func(line string, v float64) {
		if _, rest, ok := strings.Cut(line, label+`="`); ok {
			value, _, _ := strings.Cut(rest, `"`)
			out[value] = v
		}
	})
	return out, err
}

// SumMetric is the sum of a metric family's samples.
func (s *Server) SumMetric(name string) (float64, error) {
	v, err := s.Metric(name)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return sum, err
}

// samples calls fn with each sample line of the metric family name, and
// its value.
func (s *Server) samples(name string, fn func(line string, v float64)) error {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.MetricsPort))
	if err != nil {
		return fmt.Errorf("metrics of %s: %w", s, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return fmt.Errorf("metrics of %s: %q: %w", s, line, err)
		}
		fn(line, v)
	}
	return sc.Err()
}

func containsAll(line string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(line, p) {
			return false
		}
	}
	return true
}
