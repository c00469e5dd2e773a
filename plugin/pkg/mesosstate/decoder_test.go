package mesosstate

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// stateErrors are the errors a body can get.
var stateErrors = []error{ErrEmpty, ErrNotObject, ErrTruncated, ErrMalformed, ErrTrailingData, ErrNoLeader, ErrBadLeader}

// sameAs fails t unless got, err is what unmarshalState gives for body:
// the same State, or an error of the same kind.
func sameAs(t *testing.T, name string, body []byte, got *State, err error) {
	t.Helper()
	want, wantErr := unmarshalState(body)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: got %v, json.Unmarshal %v", name, err, wantErr)
	}
	for _, e := range stateErrors {
		if errors.Is(err, e) != errors.Is(wantErr, e) {
			t.Fatalf("%s: got %v, json.Unmarshal %v", name, err, wantErr)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: a state other than json.Unmarshal's:\n got %+v\nwant %+v", name, got, want)
	}
}

// sameDecode fails t unless every way of reading body agrees with
// json.Unmarshal: Decode; a new Decoder given a byte at a time; the
// decoder that read before the state it is given, then body again (each
// task taken from the last state); and after seed.
func sameDecode(t *testing.T, name string, seed, body []byte) {
	t.Helper()
	got, err := Decode(body)
	sameAs(t, name+" (Decode)", body, got, err)
	d := NewDecoder()
	if seed != nil {
		_, _ = d.Decode(bytes.NewReader(seed))
	}
	got, err = d.Decode(iotest.OneByteReader(bytes.NewReader(body)))
	sameAs(t, name+" (Decoder)", body, got, err)
	got, err = d.Decode(iotest.HalfReader(bytes.NewReader(body)))
	sameAs(t, name+" (Decoder, again)", body, got, err)
}

// corpus is the FuzzDecode corpus's bodies.
func corpus(t testing.TB) [][]byte {
	paths, _ := filepath.Glob("testdata/fuzz/FuzzDecode/*")
	var out [][]byte
	for _, path := range paths {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The corpus format: a header line, then []byte("...").
		_, value, _ := strings.Cut(string(body), "\n")
		value = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(value), "[]byte("), ")")
		if s, err := strconv.Unquote(value); err == nil {
			out = append(out, []byte(s))
		}
	}
	return out
}

// brokenBodies are bodies broken in each way, and odd good ones.
func brokenBodies() map[string]string {
	leader := `"leader":"master@10.0.0.1:5050"`
	return map[string]string{
		"empty":              "",
		"spaces":             " \n\t ",
		"null":               "null",
		"null then junk":     "null x",
		"array":              "[]",
		"number":             "12",
		"minus":              "-",
		"string":             `"state"`,
		"truncated":          `{` + leader + `,"frameworks":[{"name":"m`,
		"truncated string":   `"sta`,
		"truncated array":    `[1,`,
		"truncated escape":   `{` + leader + `,"frameworks":[{"tasks":[{"name":"a\`,
		"truncated task":     `{` + leader + `,"frameworks":[{"tasks":[{"name":"a","x":[1,2`,
		"bad task":           `{` + leader + `,"frameworks":[{"tasks":[{"name":"a","x":[1,2}],"y":"`,
		"bad number in task": `{` + leader + `,"frameworks":[{"tasks":[{"name":"a","x":01}]}]}`,
		"control in task":    "{" + leader + `,"frameworks":[{"tasks":[{"name":"a` + "\x01" + `"}]}]}`,
		"malformed":          `{` + leader + `,"frameworks":[{"name":}]}`,
		"wrong type":         `{` + leader + `,"frameworks":"none"}`,
		"wrong task type":    `{` + leader + `,"frameworks":[{"tasks":[{"name":5}]}]}`,
		"wrong key type":     `{` + leader + `,"frameworks":[{"tasks":{}}]}`,
		"task a number":      `{` + leader + `,"frameworks":[{"tasks":[5]}]}`,
		"wrong then cut":     `{` + leader + `,"frameworks":[{"tasks":[{"name":5}]}],"x":[`,
		"trailing":           `{` + leader + `} {}`,
		"trailing junk":      `{` + leader + `} x`,
		"no leader":          `{"frameworks":[]}`,
		"bad leader":         `{"leader":"10.0.0.1"}`,
		"null parts":         `{` + leader + `,"frameworks":[null,{"tasks":[null]}],"slaves":null,"leader_info":null}`,
		"empty lists":        `{` + leader + `,"frameworks":[{"tasks":[]}],"slaves":[]}`,
		"keys in any case":   `{"Leader":"master@10.0.0.1:5050","FRAMEWORKS":[{"Name":"m","Tasks":[{"ID":"t"}]}],"Slaves":[{"ID":"s"}]}`,
		"escaped keys":       `{"le\u0061der":"master@10.0.0.1:5050","\u0046rameworks":[{"n\u0061me":"m"}],"\u212alaves":[]}`,
		"kelvin key":         `{` + leader + `,"fra\u212aeworks":[],"slaves":[{"id":"\u212a"}]}`,
		"skipped fields":     `{` + leader + `,"completed_frameworks":[{"tasks":[{"name":"x","a":[1,{"b":null}]}]}],"flags":{"x":"y"},"frameworks":[{"completed_tasks":[{}],"name":"m"}]}`,
		"lists twice":        `{` + leader + `,"frameworks":[{"id":"a","name":"x","tasks":[{"id":"1","name":"p"},{"id":"2"}]}],"frameworks":[{"name":"y","tasks":[{"name":"q"}],"tasks":[{"id":"3"},{"id":"4"},{"id":"5"}]}]}`,
		"agents twice":       `{` + leader + `,"slaves":[{"id":"a","pid":"p"},{"id":"b"}],"slaves":[{"hostname":"h"}],"slaves":[{},{},{}]}`,
		"tasks null then":    `{` + leader + `,"frameworks":[{"tasks":null,"tasks":[{"id":"1"}]}]}`,
		"leader_info twice":  `{` + leader + `,"leader_info":{"id":"a"},"leader_info":{"pid":"b"}}`,
		"deep":               `{` + leader + `,"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
		"too deep":           `{` + leader + `,"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		"task too deep":      `{` + leader + `,"frameworks":[{"tasks":[{"x":` + strings.Repeat("[", 9996) + strings.Repeat("]", 9996) + `}]}]}`,
		"task just deep":     `{` + leader + `,"frameworks":[{"tasks":[{"x":` + strings.Repeat("[", 9995) + strings.Repeat("]", 9995) + `}]}]}`,
	}
}

// TestDecoderMatchesUnmarshal: the decoder agrees with json.Unmarshal on
// the recorded states, the fuzz corpus, and bodies broken in each way,
// whole or a byte at a time, new or after another state.
func TestDecoderMatchesUnmarshal(t *testing.T) {
	small := readFixture(t, "testdata/small.json")
	example := readFixture(t, "../../../examples/mesos/state.json")
	sameDecode(t, "small", example, small)
	sameDecode(t, "example", small, example)
	for i, body := range corpus(t) {
		sameDecode(t, "corpus "+strconv.Itoa(i), small, body)
	}
	for name, body := range brokenBodies() {
		sameDecode(t, name, small, []byte(body))
		sameDecode(t, name+" after itself", []byte(body), []byte(body))
	}
}

// TestDecoderTakesTheLastStates: a state decoded again decodes no task
// and no agent; one whose task changed decodes that task only, even when
// another came before it; the values are json.Unmarshal's all along,
// and a failed state leaves the last good one to take from.
func TestDecoderTakesTheLastStates(t *testing.T) {
	small := readFixture(t, "testdata/small.json")
	d := NewDecoder()
	decode := func(name string, body []byte, tasks, decoded, agents, agentsDecoded int) {
		t.Helper()
		st, err := d.Decode(bytes.NewReader(body))
		sameAs(t, name, body, st, err)
		want := DecodeStats{Tasks: tasks, TasksDecoded: decoded, Agents: agents, AgentsDecoded: agentsDecoded, Bytes: int64(len(body))}
		if got := d.Stats(); got != want {
			t.Fatalf("%s: %+v, want %+v", name, got, want)
		}
	}
	decode("first", small, 2, 2, 2, 2)
	decode("again", small, 2, 0, 2, 0)
	moved := bytes.Replace(small, []byte(`"state": "TASK_STAGING"`), []byte(`"state": "TASK_RUNNING"`), 1)
	if bytes.Equal(moved, small) {
		t.Fatal("the fixture changed: no staging task")
	}
	decode("one task changed", moved, 2, 1, 2, 0)
	// A task before the others: each after it is where it was not.
	var st map[string]any
	if err := json.Unmarshal(moved, &st); err != nil {
		t.Fatal(err)
	}
	fw := st["frameworks"].([]any)[0].(map[string]any)
	fw["tasks"] = append([]any{map[string]any{"id": "new", "name": "new", "state": "TASK_RUNNING"}}, fw["tasks"].([]any)...)
	inserted, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	decode("inserted, re-marshalled", inserted, 3, 3, 2, 2) // json.Marshal writes other bytes
	decode("inserted again", inserted, 3, 0, 2, 0)
	if _, err := d.Decode(bytes.NewReader(inserted[:len(inserted)/2])); !errors.Is(err, ErrTruncated) {
		t.Fatalf("half a state: %v", err)
	}
	decode("after a truncated state", inserted, 3, 0, 2, 0)
}

// FuzzDecoder: on any body, every way of reading it agrees with
// json.Unmarshal (see sameDecode), after the corpus's first state and
// after the body itself.
func FuzzDecoder(f *testing.F) {
	for _, body := range corpus(f) {
		f.Add(body)
	}
	for _, body := range brokenBodies() {
		if len(body) < 1000 {
			f.Add([]byte(body))
		}
	}
	small := readFixture(f, "testdata/small.json")
	f.Add(small)
	f.Fuzz(func(t *testing.T, body []byte) {
		sameDecode(t, "fuzzed", small, body)
		sameDecode(t, "fuzzed after itself", body, body)
	})
}

// FuzzScanValue: the scanner accepts a body's first value where
// encoding/json does, and where it does not, errors without a panic: a
// body cut short is told from bad syntax as json.Decoder tells them.
func FuzzScanValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"\u00e9\n"]}`, `[`, `"\x`, `01`, `-`, `1.`, `{"a" 1}`, "\"\x01\"", `tru`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newScanner(iotest.OneByteReader(bytes.NewReader(body)), nil)
		err := s.value(0)
		if err == nil {
			_, more := s.space()
			if json.Valid(body) == more {
				t.Fatalf("%q: the scanner reads a value, then more %v; json.Valid %v", body, more, json.Valid(body))
			}
			return
		}
		var v json.RawMessage
		jerr := json.NewDecoder(bytes.NewReader(body)).Decode(&v)
		switch {
		case jerr == nil:
			t.Fatalf("%q: scanner %v, json.Decoder reads a value", body, err)
		case errors.Is(err, errCut) != (errors.Is(jerr, io.ErrUnexpectedEOF) || jerr == io.EOF):
			t.Fatalf("%q: scanner %v, json.Decoder %v", body, err, jerr)
		}
	})
}
