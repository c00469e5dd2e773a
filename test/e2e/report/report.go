// Package report is the e2e run's record: every check, figure, table and
// step time of a run, in order, written as a Markdown page (docs/e2e.md,
// or the page of another scale) with the same record as JSON beside it.
// A run of another scale also puts its own section into the default run's
// page, between marks that only that run rewrites (Spliced).
package report

import (
	"fmt"
	"sync"
	"time"
)

// Page is what heads a run's page and where its section goes.
type Page struct {
	// Title, Command and Intro head the page: what made it and what ran.
	Title, Command, Intro string
	// Scale is the run's -scale; a run other than the default one puts
	// its section into the default run's page too.
	Scale string
	// Carried are the runs whose sections the default run's page carries,
	// in the order the page has them.
	Carried []Spliced
}

// Spliced is a run of another scale whose section the default run's page
// carries, between marks that only that run rewrites.
type Spliced struct {
	Scale, Heading string
}

// Report collects every assertion and figure of a run, in order, and
// writes them as docs/e2e.md and docs/e2e.json.
type Report struct {
	mu   sync.Mutex
	page Page
	// section renders the part of the page that a run of another scale
	// also puts into the default run's page (summary: that copy), set by
	// the thresholds and disruptions scenarios; nil for none.
	section func(summary bool) string
	// data, if set, gives the figures of the section for the JSON.
	data    func() any
	Started time.Time `json:"started"`
	Checks  []Check   `json:"checks"`
	Figures []Figure  `json:"figures"`
	Tables  []Table   `json:"tables"`
	Steps   []Step    `json:"steps"`
	Data    any       `json:"data,omitempty"`
}

// Check is one assertion: what was checked in which section, and what was
// seen.
type Check struct {
	Section string `json:"section"`
	What    string `json:"what"`
	Pass    bool   `json:"pass"`
	Detail  string `json:"detail,omitempty"`
}

// Figure is one measured value, reported and not checked.
type Figure struct {
	What  string `json:"what"`
	Value string `json:"value"`
}

// Table is a titled table of figures.
type Table struct {
	Title  string     `json:"title"`
	Header []string   `json:"header"`
	Rows   [][]string `json:"rows"`
}

// Step is how long one step of the run took.
type Step struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// New starts the report of a run with its page.
func New(p Page) *Report {
	return &Report{page: p, Started: time.Now().UTC()}
}

// SetSection sets what renders the run's own section (see Report.section).
func (r *Report) SetSection(section func(summary bool) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.section = section
}

// SetData sets what gives the section's figures for the JSON.
func (r *Report) SetData(data func() any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.data = data
}

// Assert records a check; detail says what was seen.
func (r *Report) Assert(section, what string, pass bool, detail string, args ...any) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Checks = append(r.Checks, Check{section, what, pass, fmt.Sprintf(detail, args...)})
	status := "ok  "
	if !pass {
		status = "FAIL"
	}
	fmt.Printf("  %s %s: %s (%s)\n", status, section, what, fmt.Sprintf(detail, args...))
	return pass
}

// Fail records a step that could not finish.
func (r *Report) Fail(section, err string) { r.Assert(section, "completes", false, "%s", err) }

// Figure records a measured value.
func (r *Report) Figure(what, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures = append(r.Figures, Figure{what, value})
}

// Table records a table.
func (r *Report) Table(title string, header []string, rows [][]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Tables = append(r.Tables, Table{title, header, rows})
}

// Duration records how long a step took.
func (r *Report) Duration(name string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Steps = append(r.Steps, Step{name, d.Seconds()})
}

// Failures counts the failed checks.
func (r *Report) Failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.Checks {
		if !c.Pass {
			n++
		}
	}
	return n
}

// Failed tells whether any check failed.
func (r *Report) Failed() bool { return r.Failures() > 0 }
