// Package toolreport holds what the reports of bench/, bench/absorb and
// soak/ share: the machine a run was made on, read and printed the same
// way by all three (machine.go), and the Markdown they are written in: a
// page of headings, paragraphs, lists and tables (markdown.go), and the
// formats of the figures in them (format.go).
//
// A report section is a heading, a table and a paragraph saying how the
// figures were taken:
//
//	var d toolreport.Doc
//	d.Heading(2, "%s: CPU per query", shape)
//	t := toolreport.NewTable("target", "server CPU µs/query", "× stock")
//	for _, key := range keys {
//		t.Row(key, toolreport.Bold(fmt.Sprintf("%.1f", cpu[key])), toolreport.Ratio(cpu[key], cpu["stock"]))
//	}
//	d.Table(t)
//	d.Para("Each target in turn, %d rounds of %s; "+
//		"the median of the rounds.", rounds, duration)
//
// Long prose is written as a constant split over source lines with +, as
// above: the page gets it as one line, the source stays readable.
package toolreport
