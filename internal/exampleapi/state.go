package exampleapi

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// maxEvents bounds the event log a watch can resume from; a watch from
// before it is told 410 Gone and lists again, as with the API server's
// watch cache.
const maxEvents = 1000

// state is the objects served, the event log and the kinds ever seen. A
// kind stays served once its last object is gone, so that the informers
// watching it are not told 404.
type state struct {
	mu      sync.Mutex
	rv      int64 // the newest resourceVersion
	objects map[objectKey]*stored
	kinds   map[resourceID]*kindInfo
	events  []event
	floor   int64 // a watch from a version below this is too old
	changed chan struct{}
	created string // every object's creationTimestamp
}

// stored is one object: as its file says it (to tell a change) and as it
// is served (metadata filled in as the API server would).
type stored struct {
	source *unstructured.Unstructured
	served *unstructured.Unstructured
}

// event is one change, as a watch sends it.
type event struct {
	rv  int64
	key objectKey
	typ string // ADDED, MODIFIED, DELETED
	obj *unstructured.Unstructured
}

// kindInfo is what discovery says of a resource.
type kindInfo struct {
	id         resourceID
	kind       string
	namespaced bool
	versions   map[string]bool
}

func newState() *state {
	return &state{
		objects: map[objectKey]*stored{},
		kinds:   map[resourceID]*kindInfo{},
		changed: make(chan struct{}),
		created: time.Now().UTC().Format(time.RFC3339),
	}
}

// replace makes objs the served set: an event for each object added,
// changed or gone. It refuses the whole set if any object cannot be
// served, keeping the last one.
func (s *state) replace(objs []*unstructured.Unstructured) (added, modified, deleted int, err error) {
	next := map[objectKey]*unstructured.Unstructured{}
	for _, o := range objs {
		if err := checkObject(o); err != nil {
			return 0, 0, 0, err
		}
		k := keyOf(o)
		if _, dup := next[k]; dup {
			return 0, 0, 0, fmt.Errorf("%s is defined twice", k)
		}
		next[k] = o
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range sortedKeys(next) {
		o := next[k]
		s.noteKind(k.resourceID, o)
		old, ok := s.objects[k]
		switch {
		case !ok:
			s.record(k, "ADDED", o)
			added++
		case !reflect.DeepEqual(old.source.Object, o.Object):
			s.record(k, "MODIFIED", o)
			modified++
		}
	}
	for _, k := range sortedKeys(s.objects) {
		if _, ok := next[k]; !ok {
			s.record(k, "DELETED", s.objects[k].source)
			deleted++
		}
	}
	if added+modified+deleted > 0 {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return added, modified, deleted, nil
}

func sortedKeys[V any](m map[objectKey]V) []objectKey {
	keys := make([]objectKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

// noteKind serves o's resource, at o's version. Called with s.mu held.
func (s *state) noteKind(id resourceID, o *unstructured.Unstructured) {
	info, ok := s.kinds[id]
	if !ok {
		info = &kindInfo{id: id, kind: o.GetKind(), namespaced: !clusterScoped[o.GetKind()], versions: map[string]bool{}}
		s.kinds[id] = info
	}
	info.versions[o.GroupVersionKind().Version] = true
}

// record applies one change at the next resourceVersion and logs it.
// Called with s.mu held.
func (s *state) record(k objectKey, typ string, source *unstructured.Unstructured) {
	s.rv++
	served := s.serve(k, source)
	if typ == "DELETED" {
		delete(s.objects, k)
	} else {
		s.objects[k] = &stored{source: source, served: served}
	}
	s.events = append(s.events, event{rv: s.rv, key: k, typ: typ, obj: served})
	if over := len(s.events) - maxEvents; over > 0 {
		s.floor = s.events[over-1].rv
		s.events = append(s.events[:0], s.events[over:]...)
	}
}

// serve is source with the metadata the API server fills in. Called with
// s.mu held.
func (s *state) serve(k objectKey, source *unstructured.Unstructured) *unstructured.Unstructured {
	o := source.DeepCopy()
	if k.namespace != "" {
		o.SetNamespace(k.namespace)
	}
	sum := sha256.Sum256([]byte(k.String()))
	o.SetUID(uidOf(sum))
	o.SetResourceVersion(strconv.FormatInt(s.rv, 10))
	o.SetGeneration(1)
	_ = unstructured.SetNestedField(o.Object, s.created, "metadata", "creationTimestamp")
	return o
}

// uidOf formats 16 bytes of sum as a UUID: stable for a name, so that an
// edited object keeps its UID.
func uidOf(sum [32]byte) types.UID {
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16]))
}

// dirSignature changes when a YAML file in dir is added, removed or
// written.
func dirSignature(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	sig := ""
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		sig += fmt.Sprintf("%s %d %d\n", f, fi.Size(), fi.ModTime().UnixNano())
	}
	return sig, nil
}
