// Package stanzatest runs a plugin's stanza parser the way setup tests
// check it: against an error the stanza must give, or none.
package stanzatest

import (
	"strings"
	"testing"

	"github.com/coredns/caddy"
)

// Parse parses corefile (a server block's lines) with parse. When wantErr
// is set, parse must fail with an error holding it; otherwise it must
// succeed. ok says whether there is a parsed value to check further: false
// after an expected error, or after a failure already reported.
func Parse[T any](t *testing.T, corefile, wantErr string, parse func(*caddy.Controller) (T, error)) (parsed T, ok bool) {
	t.Helper()
	parsed, err := parse(caddy.NewTestController("dns", corefile))
	switch {
	case wantErr != "":
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one with %q", corefile, err, wantErr)
		}
		return parsed, false
	case err != nil:
		t.Errorf("%q: %v", corefile, err)
		return parsed, false
	}
	return parsed, true
}
