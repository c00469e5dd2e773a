package mesos

import (
	"fmt"
	"os"
	"strings"
)

// The log lines of mesosschema that the report counts, by kind.
var logPatterns = map[string]string{
	"outage":   "no master gives a good state",
	"recovery": "gives a good state again",
	"held":     "lists no agent",
	"zk-lost":  "connection lost; keeping the last leader",
	"zk-back":  ": connected again",
}

// maxLogLines bounds the plugin's log lines the report quotes.
const maxLogLines = 30

// readLogs counts the lines of the server's log about the masters, before
// the byte offset from (the fault's start) and after it, and returns the
// plugin's lines (each cut to 300 bytes, at most maxLogLines), with the
// lines that continue them: a poll's failure lists each master's on a
// line of its own, "master host:port: ...".
func readLogs(path string, from int64) (before, after map[string]int, lines []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, []string{fmt.Sprintf("log unreadable: %v", err)}
	}
	before, after = map[string]int{}, map[string]int{}
	offset := int64(0)
	continued := false // the line before was the plugin's, or continued one
	for line := range strings.SplitSeq(string(b), "\n") {
		counts := after
		if offset < from {
			counts = before
		}
		offset += int64(len(line)) + 1
		for kind, p := range logPatterns {
			if strings.Contains(line, p) {
				counts[kind]++
			}
		}
		ours := strings.Contains(line, "plugin/mesosschema")
		continued = ours || continued && strings.HasPrefix(line, "master ")
		if continued && len(lines) < maxLogLines {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			lines = append(lines, line)
		}
	}
	return before, after, lines
}

// logSize is the size of the server's log now.
func (e *env) logSize() int64 {
	fi, err := os.Stat(e.srv.LogPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}
