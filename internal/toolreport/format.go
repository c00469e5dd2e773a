package toolreport

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Dash is the cell of a figure not measured.
const Dash = "–"

// Bold is s in bold: the figure a row is about.
func Bold(s string) string { return "**" + s + "**" }

// Met is a target's verdict: "met" or "not met".
func Met(ok bool) string {
	if ok {
		return "met"
	}
	return "not met"
}

// MiB is bytes in MiB, one decimal: "74.2" (Dash for 0, a figure not
// measured).
func MiB(bytes int64) string {
	if bytes == 0 {
		return Dash
	}
	return fmt.Sprintf("%.1f", float64(bytes)/(1<<20))
}

// Ratio is x / y with two decimals: "0.57" (Dash when either is 0).
func Ratio(x, y float64) string {
	if x == 0 || y == 0 {
		return Dash
	}
	return fmt.Sprintf("%.2f", x/y)
}

// RatioOf is x / y with the figures it comes from: "0.57 (119.2 / 208.8
// MiB)", each figure as Trim writes it; what follows the figures in the
// parentheses is unit. Unlike Ratio it writes a ratio of 0 (Dash only
// when y is 0).
func RatioOf(x, y float64, unit string) string {
	if y == 0 {
		return Dash
	}
	return fmt.Sprintf("%.2f (%s / %s %s)", x/y, Trim(x), Trim(y), unit)
}

// Trim is v with at most two decimals and no trailing zeros: 30.27, 2.5,
// 3.
func Trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

// Percent is a share (0.25) as a whole percentage: "25%".
func Percent(share float64) string { return fmt.Sprintf("%.0f%%", 100*share) }

// Thousands is n counted in thousands: 10000 as "10k", 1500 as "1.5k",
// 999 as "999".
func Thousands(n int) string {
	switch {
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}

// Pairs is every key of m with its value, in the order of the keys,
// joined by commas: Pairs(counts, "%s %d") is "changed 20, unchanged 1"
// ("" for an empty m). format has a verb for the key, then one for the
// value.
func Pairs[V any](m map[string]V, format string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf(format, k, m[k]))
	}
	return strings.Join(parts, ", ")
}
