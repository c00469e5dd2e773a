package server

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// CrossCheck compares the answers of two targets to the same queries, so
// the report can show they did the same work.
type CrossCheck struct {
	Pair                string
	Compared, Differing int
	Examples            []string // the first few differences
}

// crossCheckQueries is how many distinct queries of a mix are compared.
const crossCheckQueries = 300

// Compare asks a and b the first distinct queries of a data file
// and compares rcode and answer records (owner case and TTL aside; order
// aside, since both rotate).
func Compare(a, b *Server, file string) CrossCheck {
	c := CrossCheck{Pair: a.Key + " vs " + b.Key}
	f, err := os.Open(file)
	if err != nil {
		c.Examples = append(c.Examples, err.Error())
		return c
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() && c.Compared < crossCheckQueries {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) != 2 || seen[line] {
			continue
		}
		seen[line] = true
		c.Compared++
		qtype := dns.StringToType[fields[1]]
		ra, rb := summarize(a, fields[0], qtype), summarize(b, fields[0], qtype)
		if ra != rb {
			c.Differing++
			if len(c.Examples) < 5 {
				c.Examples = append(c.Examples, fmt.Sprintf("%s %s: %s answers %s; %s answers %s", fields[0], fields[1], a.Key, ra, b.Key, rb))
			}
		}
	}
	return c
}

// summarize is the rcode and sorted answer records of s's reply.
func summarize(s *Server, name string, qtype uint16) string {
	r, err := Exchange(s.Addr(), false, name, qtype)
	if err != nil {
		return "error: " + err.Error()
	}
	var rrs []string
	for _, rr := range r.Answer {
		rr = dns.Copy(rr)
		rr.Header().Name, rr.Header().Ttl = strings.ToLower(rr.Header().Name), 0
		rrs = append(rrs, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	slices.Sort(rrs)
	return dns.RcodeToString[r.Rcode] + " [" + strings.Join(rrs, "; ") + "]"
}
