package mesosschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/mesosmaster"
)

// httpListenAddr is where `http ARG` listens. A bare port, or a port with
// no host (":8123"), listens on 127.0.0.1 only: the interface has no
// authentication, and /v1/enumerate lists the whole cluster. Any other
// address, 0.0.0.0 included, must be written out. Port 0 with a host
// takes any free port, as a listener does (the tests serve the README's
// Corefiles so); a port alone must be one a client can be told.
func httpListenAddr(arg string) (string, error) {
	host, port, err := net.SplitHostPort(arg)
	if err != nil {
		host, port = "", arg
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && host == "") {
		return "", fmt.Errorf("%q is not a port or a host:port to listen on", arg)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// errCredentialFile: a basic_auth_file that is not Mesos's credential
// format. The message never quotes the file.
var errCredentialFile = errors.New(`want one line "PRINCIPAL SECRET" or a JSON object {"principal": ..., "secret": ...}`)

// readCredentialFile reads a Mesos credential file, in either of the
// forms Mesos's --credential takes: "PRINCIPAL SECRET" on one line, or
// {"principal": ..., "secret": ...}. No error quotes its content.
func readCredentialFile(path string) (*mesosmaster.BasicAuth, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(string(raw))
	var b mesosmaster.BasicAuth
	if strings.HasPrefix(text, "{") {
		var f struct{ Principal, Secret string }
		if json.Unmarshal([]byte(text), &f) != nil {
			return nil, fmt.Errorf("%s: %w", path, errCredentialFile)
		}
		b = mesosmaster.BasicAuth{Principal: f.Principal, Secret: f.Secret}
	} else if fields := strings.Fields(text); len(fields) == 2 {
		b = mesosmaster.BasicAuth{Principal: fields[0], Secret: fields[1]}
	}
	if b.Principal == "" || b.Secret == "" {
		return nil, fmt.Errorf("%s: %w", path, errCredentialFile)
	}
	return &b, nil
}

// sizeUnits are max_state_size's suffixes, longest first so that "MiB"
// is not read as "B".
var sizeUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// Bounds of max_state_size: below minStateSize no real state fits; above
// maxStateSize a broken master could make the process hold gigabytes.
const (
	minStateSize = 1 << 10
	maxStateSize = 4 << 30
)

// parseSize reads a size such as 256MiB, 500MB or 1048576 (bytes).
func parseSize(s string) (int64, error) {
	num, factor := s, int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			num, factor = n, u.factor
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a size such as 256MiB, 500MB or 1048576", s)
	}
	if n > maxStateSize/factor || n*factor < minStateSize {
		return 0, fmt.Errorf("%q is out of range: from 1KiB to 4GiB", s)
	}
	return n * factor, nil
}
