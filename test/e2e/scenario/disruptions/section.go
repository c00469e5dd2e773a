package disruptions

import (
	"fmt"
	"strings"

	"github.com/schemadns/schemadns/test/e2e/cluster"
	"github.com/schemadns/schemadns/test/e2e/report"
)

// Heading opens the disruptions section, on both pages.
const Heading = "## Disruptions: killed pods, node-local updates, a drain\n\n"

// Scale is the -scale of a disruptions run.
const Scale = "disruptions"

// Page heads a disruptions run's page.
func Page() report.Page {
	return report.Page{
		Title:   "Disruptions: what `make e2e SCALE=disruptions` measured",
		Command: "make e2e SCALE=disruptions",
		Scale:   Scale,
		Intro:   cluster.Description,
	}
}

// section is the run's table, on its page and the default run's.
func (s *Disruptions) section(summary bool) string {
	var b strings.Builder
	b.WriteString(Heading)
	if summary {
		fmt.Fprintf(&b, "From `make e2e SCALE=disruptions` on %s (the whole run in [e2e-disruptions.md](e2e-disruptions.md)). ",
			s.Report.Started.Format("2006-01-02"))
	}
	b.WriteString(disruptionsExplained)
	fmt.Fprintf(&b, "\n| %s |\n|%s\n", strings.Join(disruptionHeader, " | "), strings.Repeat("---|", len(disruptionHeader)))
	for _, r := range s.rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r.cells(), " | "))
	}
	return b.String()
}

// disruptionsExplained says how to read the table.
const disruptionsExplained = `Each row is one load client's lookups (150 a second,
getaddrinfo through kubelet's resolv.conf, ndots 5) from 3 s before the
disruption until 10 s after the cluster was whole again. One lookup in five
is a new name (a pod record no cache holds); "failed" says how many of the
failures were those. load-autopath has the KEP-2009 search path of
deploy/components/node-local/example-pod.yaml (its lookups take
gensearchpath, over UDP to the cluster DNS). A client's dnsConfig options
are in its name
(load-glibc-timeout1: ` + "`options timeout:1`" + `; load-glibc-reopen:
` + "`single-request-reopen`" + `). "Stock's node-local" is kubernetes'
nodelocaldns addon in IPVS mode (its Corefile, its DaemonSet strategy,
ports and probes) run by our binary: k8s-dns-node-cache's module,
k8s.io/dns, is not served by the Go module proxy here. A drain on this one-node cluster cordons the node, evicts the cluster
DNS pods with deploy/base's PDB in force, and uncordons the node once the
PDB has refused the second eviction, standing in for the node a
replacement would go to.
`

// rowCells are the table's rows so far.
func (s *Disruptions) rowCells() [][]string {
	var rows [][]string
	for _, r := range s.rows {
		rows = append(rows, r.cells())
	}
	return rows
}
