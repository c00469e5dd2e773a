package toolreport

import (
	"errors"
	"os"
	"strings"
)

// Section is a part of a page that one tool writes into a page another
// tool writes whole (make overload's summary in make bench's page): its
// markers tell where it is, and the page's own tool carries it over.
type Section struct{ Begin, End string }

// NewSection is the section of the given name, marked with HTML comments
// that say which command writes it.
func NewSection(name, writtenBy string) Section {
	return Section{Begin: "<!-- " + name + ": written by " + writtenBy + " -->", End: "<!-- " + name + " end -->"}
}

// Of is the section of page, with its markers and a newline after them,
// or "" when the page has none.
func (s Section) Of(page string) string {
	from, to := strings.Index(page, s.Begin), strings.Index(page, s.End)
	if from < 0 || to < from {
		return ""
	}
	return page[from:to+len(s.End)] + "\n"
}

// Splice is page with body as the section, in place of the one there or
// at the end.
func (s Section) Splice(page, body string) string {
	block := s.Begin + "\n" + body + s.End + "\n"
	from, to := strings.Index(page, s.Begin), strings.Index(page, s.End)
	if from < 0 || to < from {
		return strings.TrimRight(page, "\n") + "\n\n" + block
	}
	return page[:from] + block + strings.TrimPrefix(page[to+len(s.End):], "\n")
}

// SpliceFile splices body into the page at path (a page that does not
// exist yet is made of the section alone).
func (s Section) SpliceFile(path, body string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(path, []byte(s.Splice(string(old), body)), 0o644)
}

// Carry is fresh with the section of old appended, if old has one: how
// the page's own tool keeps what another wrote into it.
func (s Section) Carry(old, fresh string) string {
	kept := s.Of(old)
	if kept == "" {
		return fresh
	}
	return strings.TrimRight(fresh, "\n") + "\n\n" + kept
}

// OverloadSummary is the section make overload keeps in docs/benchmarks.md.
var OverloadSummary = NewSection("overload", "make overload; the rest of the page by make bench")
