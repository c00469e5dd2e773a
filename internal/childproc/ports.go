package childproc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
)

// Ports are picked below Linux's ephemeral range (32768 and up), so that an
// outgoing connection cannot take a server's port while it is stopped for an
// outage and block its restart on the same port.
const (
	portLow      = 20000
	portHigh     = 32000
	portAttempts = 100
)

// FreePort returns a port on 127.0.0.1 that nothing listens on now. Another
// process could take it before ours binds it; with random picks from a range
// the kernel does not hand out itself, that takes a rare collision.
func FreePort() (int, error) {
	for range portAttempts {
		port := portLow + rand.IntN(portHigh-portLow)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return port, l.Close()
		}
	}
	return 0, fmt.Errorf("no free port on 127.0.0.1 in [%d, %d) after %d attempts", portLow, portHigh, portAttempts)
}

// FreePorts returns n distinct free ports.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}
