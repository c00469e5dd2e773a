package toolreport

import (
	"fmt"
	"strings"
)

// Doc is a Markdown page being written. Heading, Para, List and Table each
// write a whole block and the blank line that ends it; Line writes one
// line of a block left open (the lines of one paragraph, list items
// written one by one), which End closes.
type Doc struct{ b strings.Builder }

// String is the page written so far.
func (d *Doc) String() string { return d.b.String() }

// Heading writes a heading of the level given (1 is the page's title).
func (d *Doc) Heading(level int, format string, args ...any) {
	d.b.WriteString(strings.Repeat("#", level) + " ")
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteString("\n\n")
}

// Para writes a paragraph.
func (d *Doc) Para(format string, args ...any) {
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteString("\n\n")
}

// Line writes one line of a block that End, a heading of the next block
// or the end of the page closes.
func (d *Doc) Line(format string, args ...any) {
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteString("\n")
}

// End closes the block that Line wrote: a blank line.
func (d *Doc) End() { d.b.WriteString("\n") }

// List writes a bulleted list of items, one a line.
func (d *Doc) List(items []string) {
	for _, it := range items {
		d.b.WriteString("- " + it + "\n")
	}
	d.End()
}

// Table writes t.
func (d *Doc) Table(t *Table) {
	d.b.WriteString(row(t.head))
	seps := make([]string, len(t.head))
	for i := range seps {
		seps[i] = "--:"
		if i < t.text {
			seps[i] = "---"
		}
	}
	d.b.WriteString("|" + strings.Join(seps, "|") + "|\n")
	for _, r := range t.rows {
		d.b.WriteString(row(r))
	}
	d.End()
}

// row is a table's line: "| a | b |", an empty cell "| |".
func row(cells []string) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cells {
		if c != "" {
			b.WriteString(" " + c)
		}
		b.WriteString(" |")
	}
	return b.String() + "\n"
}

// Table is a Markdown table being built: its header, its rows, and how
// many of its first columns hold text (aligned left); the others hold
// figures (aligned right).
type Table struct {
	head []string
	text int
	rows [][]string
}

// NewTable is a table with the header head, its first column text and
// the others figures. An empty header cell is allowed ("").
func NewTable(head ...string) *Table { return &Table{head: head, text: 1} }

// TextColumns makes the first n columns of t text, aligned left (every
// column, when n is at least their number), and returns t.
func (t *Table) TextColumns(n int) *Table {
	t.text = n
	return t
}

// Row adds a row; its cells are written as they are (Bold and the
// formats of format.go make them).
func (t *Table) Row(cells ...string) { t.rows = append(t.rows, cells) }

// Len is the number of rows added.
func (t *Table) Len() int { return len(t.rows) }
