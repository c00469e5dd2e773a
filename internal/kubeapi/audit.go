package kubeapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The API server's audit log of lists and watches: its own record of
// which client listed what and when, for clients that export no count of
// their lists (CoreDNS's stock kubernetes plugin). A relist shows in it as
// a list after the outage that forced it.

// auditPolicy records the lists and watches of users, nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: Metadata
    users: [%s]
    verbs: ["list", "watch"]
  - level: None
`

// AuditPolicy is an audit policy that logs the lists and watches of
// users, nothing else.
func AuditPolicy(users ...string) string {
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	return fmt.Sprintf(auditPolicy, strings.Join(quoted, ", "))
}

// AuditFlags writes, in dir, a policy that logs the lists and watches of
// users (AdminUser for the kubeconfig's), and returns the kube-apiserver
// flags (Options.APIServerFlags) that log them to the file log, one JSON
// event a line.
func AuditFlags(dir, log string, users ...string) ([]string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(AuditPolicy(users...)), 0o644); err != nil {
		return nil, fmt.Errorf("audit policy: %w", err)
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + log, "--audit-log-format=json"}, nil
}

// AdminUser is the user name of the kubeconfig's token (Cluster.Kubeconfig,
// RESTConfig).
const AdminUser = "admin"

// AuditEvent is the part of an audit event that tells a list.
type AuditEvent struct {
	Stage      string   `json:"stage"`
	Verb       string   `json:"verb"`
	RequestURI string   `json:"requestURI"`
	SourceIPs  []string `json:"sourceIPs"`
	UserAgent  string   `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// IsList tells whether the event is a whole list served to the client: a
// LIST answered 200, or a watch that sends the list first
// (sendInitialEvents=true, client-go's WatchListClient) once it started.
func (ev AuditEvent) IsList() bool {
	switch ev.Verb {
	case "list":
		return ev.Stage == "ResponseComplete" && ev.ResponseStatus.Code == 200
	case "watch":
		return ev.Stage == "ResponseStarted" && strings.Contains(ev.RequestURI, "sendInitialEvents=true")
	}
	return false
}

// AuditSize is the audit log's size now: the offset a later ReadAudit
// starts from to see only what came after.
func AuditSize(log string) int64 {
	st, err := os.Stat(log)
	if err != nil {
		return 0
	}
	return st.Size()
}

// ReadAudit calls fn with each event of the audit log from offset on.
func ReadAudit(log string, offset int64, fn func(AuditEvent)) error {
	f, err := os.Open(log)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			fn(ev)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}
