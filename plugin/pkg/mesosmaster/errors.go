package mesosmaster

import "errors"

var (
	// ErrNoLeader is a master's 503: it knows of no elected leader.
	ErrNoLeader = errors.New("no leading master elected (503)")
	// ErrUnauthorized is a 401: no credentials, wrong ones, or an IAM token
	// that a fresh login did not replace with a good one.
	ErrUnauthorized = errors.New("unauthorized (401)")
	// ErrLogin is a failed DC/OS IAM login.
	ErrLogin = errors.New("IAM login failed")
	// ErrTooManyRedirects ends a chain of redirects and leader hops longer
	// than maxHops: masters pointing at each other during an election.
	ErrTooManyRedirects = errors.New("too many redirects between masters")
	// ErrBodyTooLarge is a state over Config.MaxBodySize.
	ErrBodyTooLarge = errors.New("state body over the size limit")
	// ErrNotLeader is a state whose leader is not the master that served
	// it, when the leader could not be asked in turn.
	ErrNotLeader = errors.New("state served by a master that does not lead")
	// ErrNoCandidates is a Fetch with no master to ask: ZooKeeper names none
	// and none is configured.
	ErrNoCandidates = errors.New("no master to ask: ZooKeeper names no leader and no masters are configured")
	// ErrAskedBefore is a redirect or a state's leader naming a master that
	// failed earlier in the same Fetch: it is not waited for twice.
	ErrAskedBefore = errors.New("redirected to a master that failed in this fetch")
	// ErrRedirectRefused is a redirect, or a state's leader, naming a host
	// that is neither a configured master nor the leader ZooKeeper names:
	// the credentials are not sent to it.
	ErrRedirectRefused = errors.New("redirect to a host that is not a known master refused")
	// ErrInsecureCredentials is a configuration that would send
	// credentials over plain http without saying so.
	ErrInsecureCredentials = errors.New("credentials over plain http refused")
	// ErrStopped is a Fetch after Stop.
	ErrStopped = errors.New("mesos master client stopped")
)
