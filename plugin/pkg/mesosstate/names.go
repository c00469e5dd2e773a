package mesosstate

import (
	"crypto/sha1"
	"strings"

	"github.com/schemadns/schemadns/plugin/pkg/dnsname"
)

// Label lengths: RFC 1123 allows 63 octets; Mesos-DNS's RFC 952 mode
// (EnforceRFC952) keeps its 24.
const (
	maxLabel       = 63
	maxLabelRFC952 = 24
	// hashLen is how many z-base-32 characters of a task ID's hash an
	// instance label holds.
	hashLen = 5
)

// TaskLabel turns a task name into one DNS label, by the Mesos-DNS rules:
// ASCII letters lower-cased, '.' and '_' made '-', every other character
// that is not a letter, digit or '-' removed (non-ASCII ones too), no '-'
// at either end, at most 63 characters. With rfc952, at most 24 and
// starting with a letter. "apiserver.myservice" gives
// "apiserver-myservice". A name with nothing valid in it gives "": the
// caller skips the task.
func TaskLabel(name string, rfc952 bool) string {
	limit := maxLabel
	if rfc952 {
		limit = maxLabelRFC952
	}
	if len(name) <= limit && dnsname.IsLabel(name) && (!rfc952 || isLetter(name[0])) {
		return name // the usual case: already a label
	}
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-':
			b = append(b, c)
		case c == '.' || c == '_':
			b = append(b, '-')
		}
	}
	start := 0
	for start < len(b) && (b[start] == '-' || rfc952 && !isLetter(b[start])) {
		start++
	}
	b = b[start:]
	if len(b) > limit {
		b = b[:limit]
	}
	return strings.TrimRight(string(b), "-")
}

// FrameworkName turns a framework name into a DNS name of one or more
// labels: framework names keep their dots ("marathon.prod" stays
// "marathon.prod"), and each dot-separated part is made a label as
// TaskLabel does; parts left empty are dropped. "" means the framework
// has no usable name.
func FrameworkName(name string, rfc952 bool) string {
	clean := true
	for part := range strings.SplitSeq(name, ".") {
		if part == "" || TaskLabel(part, rfc952) != part {
			clean = false
			break
		}
	}
	if clean {
		return name // the usual case, without allocating
	}
	var parts []string
	for part := range strings.SplitSeq(name, ".") {
		if l := TaskLabel(part, rfc952); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ".")
}

// VerbatimName is a DiscoveryInfo name as Mesos-DNS also serves it beside
// its label: as written, dots kept, so that "big.dog" gives the SRV owner
// _big.dog._tcp.<fw> and the names big.dog.<fw>, besides the label's
// _big-dog._tcp.<fw> and big-dog.<fw>. Mesos-DNS does not sanitise it,
// even with EnforceRFC952, but looks every question up in lower case: a
// name with an upper-case letter, a character other than a lower-case
// letter, digit, '-' or '_', an empty label or one over 63 characters is
// never answered there, and gives "" here.
func VerbatimName(name string) string {
	if name == "" {
		return ""
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > maxLabel {
			return ""
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return ""
			}
		}
	}
	return name
}

// InstanceLabel returns the label that names one instance of a task, as
// Mesos-DNS makes it: task, a dash, the first 5 z-base-32 characters of
// the SHA-1 of taskID, a dash, and the last dash-separated field of
// slaveID, lower-cased ("S4" gives "s4"). task is the task's label, as
// TaskLabel gives it. The label fits in 63 characters: the task part is
// cut, never the hash or the agent part.
func InstanceLabel(task, taskID, slaveID string) string {
	suffix := InstanceSuffix(taskID, slaveID)
	// The suffix alone always fits: agentField sees to it.
	room := max(maxLabel-len(suffix)-1, 0)
	if len(task) > room {
		task = strings.TrimRight(task[:room], "-")
	}
	if task == "" {
		return suffix
	}
	return task + "-" + suffix
}

// InstanceSuffix is what follows a task's name, after a dash, in the name
// of one of its instances: the hash of taskID, a dash and the agent part of
// slaveID ("4dfjd-s0"), as InstanceLabel describes them. Mesos-DNS appends
// it uncut to a VerbatimName too ("big.dog-4dfjd-s0").
func InstanceSuffix(taskID, slaveID string) string {
	if agent := agentField(slaveID); agent != "" {
		return taskHash(taskID) + "-" + agent
	}
	return taskHash(taskID)
}

// agentField returns the last dash-separated field of an agent ID, made a
// label, short enough to leave room for the hash.
func agentField(slaveID string) string {
	field := slaveID[strings.LastIndexByte(slaveID, '-')+1:]
	l := TaskLabel(field, false)
	if limit := maxLabel - hashLen - 1; len(l) > limit {
		l = strings.TrimRight(l[:limit], "-")
	}
	return l
}

// zbase32 is the z-base-32 alphabet (human-oriented base 32).
const zbase32 = "ybndrfg8ejkmcpqxot1uwisza345h769"

// taskHash returns the first 5 z-base-32 characters of the SHA-1 of id: its
// first 25 bits, 5 bits a character, most significant first.
func taskHash(id string) string {
	sum := sha1.Sum([]byte(id))
	bits := uint32(sum[0])<<24 | uint32(sum[1])<<16 | uint32(sum[2])<<8 | uint32(sum[3])
	var out [hashLen]byte
	for i := range out {
		out[i] = zbase32[bits>>(27-5*i)&31]
	}
	return string(out[:])
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
