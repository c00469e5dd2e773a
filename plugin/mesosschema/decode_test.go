package mesosschema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/schemadns/schemadns/plugin/pkg/mesosstate"
	"github.com/schemadns/schemadns/plugin/pkg/mesosstate/mesosstatetest"
)

// stateErrors are mesosstate's errors a body can get.
var stateErrors = []error{mesosstate.ErrEmpty, mesosstate.ErrNotObject, mesosstate.ErrTruncated, mesosstate.ErrMalformed,
	mesosstate.ErrTrailingData, mesosstate.ErrNoLeader, mesosstate.ErrBadLeader}

// sameDecode fails t unless decodeState reads body, given a byte at a
// time, as mesosstate.Decode does: the same State, or an error of the
// same kind.
func sameDecode(t *testing.T, name string, body []byte) {
	t.Helper()
	want, wantErr := mesosstate.Decode(body)
	got, err := decodeState(iotest.OneByteReader(bytes.NewReader(body)))
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: decodeState = %v, Decode = %v", name, err, wantErr)
	}
	for _, e := range stateErrors {
		if errors.Is(err, e) != errors.Is(wantErr, e) {
			t.Fatalf("%s: decodeState = %v, Decode = %v", name, err, wantErr)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: decodeState and Decode give different states", name)
	}
}

// TestDecodeStateMatchesDecode: the streaming decoder agrees with
// mesosstate.Decode on generated states of every shape, the recorded
// example, the fuzz corpus, and bodies broken in each way.
func TestDecodeStateMatchesDecode(t *testing.T) {
	for i, shape := range []mesosstatetest.GenOptions{mesosstatetest.BenchShape, mesosstatetest.BenchShapeWorst} {
		shape.Tasks, shape.Frameworks, shape.Agents = 300, 7, 20
		sameDecode(t, "shape "+strconv.Itoa(i), mesosstatetest.Marshal(mesosstatetest.Generate(shape)))
	}
	example, err := os.ReadFile("../../examples/mesos/state.json")
	if err != nil {
		t.Fatal(err)
	}
	sameDecode(t, "example", example)
	corpus, _ := filepath.Glob("../pkg/mesosstate/testdata/fuzz/FuzzDecode/*")
	for _, path := range corpus {
		body, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// The corpus format: a header line, then []byte("...").
		_, value, _ := strings.Cut(string(body), "\n")
		value = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(value), "[]byte("), ")")
		if s, err := strconv.Unquote(value); err == nil {
			sameDecode(t, path, []byte(s))
		}
	}
	leader := `"leader":"master@10.0.0.1:5050"`
	for name, body := range map[string]string{
		"empty":            "",
		"spaces":           " \n\t ",
		"null":             "null",
		"array":            "[]",
		"string":           `"state"`,
		"truncated":        `{` + leader + `,"frameworks":[{"name":"m`,
		"truncated string": `"sta`,
		"truncated array":  `[1,`,
		"malformed":        `{` + leader + `,"frameworks":[{"name":}]}`,
		"wrong type":       `{` + leader + `,"frameworks":"none"}`,
		"wrong task type":  `{` + leader + `,"frameworks":[{"tasks":[{"name":5}]}]}`,
		"wrong key type":   `{` + leader + `,"frameworks":[{"tasks":{}}]}`,
		"trailing":         `{` + leader + `} {}`,
		"trailing junk":    `{` + leader + `} x`,
		"no leader":        `{"frameworks":[]}`,
		"bad leader":       `{"leader":"10.0.0.1"}`,
		"null parts":       `{` + leader + `,"frameworks":[null,{"tasks":[null]}],"slaves":null,"leader_info":null}`,
		"keys in any case": `{"Leader":"master@10.0.0.1:5050","FRAMEWORKS":[{"Name":"m","Tasks":[{"ID":"t"}]}],"Slaves":[{"ID":"s"}]}`,
		"skipped fields":   `{` + leader + `,"completed_frameworks":[{"tasks":[{"name":"x","a":[1,{"b":null}]}]}],"flags":{"x":"y"},"frameworks":[{"completed_tasks":[{}],"name":"m"}]}`,
	} {
		sameDecode(t, name, []byte(body))
	}
}

// FuzzDecodeState: on any body, the streaming decoder agrees with
// mesosstate.Decode.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"leader":"master@10.0.0.1:5050","frameworks":[{"name":"m","tasks":[{"id":"t","state":"TASK_RUNNING"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { sameDecode(t, "fuzzed", body) })
}
