package toolreport

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// CheckGolden compares page with the golden page in the file at path, for
// a test that renders a report from fixed results: a change to a report's
// code then shows as a difference to review. With update it writes page
// to path instead. The error names the first line that differs.
func CheckGolden(path, page string, update bool) error {
	if update {
		return os.WriteFile(path, []byte(page), 0o644)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s missing: run the test with -update to write it", path)
	}
	if err != nil {
		return err
	}
	want := string(b)
	if page == want {
		return nil
	}
	got, wantLines := strings.Split(page, "\n"), strings.Split(want, "\n")
	for i := range max(len(got), len(wantLines)) {
		g, w := lineAt(got, i), lineAt(wantLines, i)
		if g != w {
			return fmt.Errorf("%s:%d differs (-update writes the page again):\n got: %q\nwant: %q", path, i+1, g, w)
		}
	}
	return fmt.Errorf("%s differs", path) // not reached: the lines differ somewhere
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of the page)"
}
