package exampleapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// selector is a list's or watch's namespace, labelSelector and
// fieldSelector (metadata.name and metadata.namespace, the fields every
// resource has).
type selector struct {
	req    request
	labels labels.Selector
	fields fields.Selector
}

func newSelector(q url.Values, req request) (selector, error) {
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return selector{}, fmt.Errorf("labelSelector: %w", err)
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return selector{}, fmt.Errorf("fieldSelector: %w", err)
	}
	for _, r := range fs.Requirements() {
		if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return selector{}, fmt.Errorf("fieldSelector: field label not supported here: %s", r.Field)
		}
	}
	return selector{req: req, labels: ls, fields: fs}, nil
}

func (sel selector) matches(k objectKey, o *unstructured.Unstructured) bool {
	if k.resourceID != sel.req.info.id || (sel.req.namespace != "" && k.namespace != sel.req.namespace) {
		return false
	}
	return sel.labels.Matches(labels.Set(o.GetLabels())) &&
		sel.fields.Matches(fields.Set{"metadata.name": k.name, "metadata.namespace": k.namespace})
}

// at is o as served at the request's version.
func (sel selector) at(o *unstructured.Unstructured) map[string]any {
	m := maps.Clone(o.Object)
	m["apiVersion"] = sel.req.apiVersion()
	return m
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, req request) {
	sel, err := newSelector(r.URL.Query(), req)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	items := []map[string]any{}
	s.state.mu.Lock()
	for _, k := range sortedKeys(s.state.objects) {
		if o := s.state.objects[k].served; sel.matches(k, o) {
			items = append(items, sel.at(o))
		}
	}
	rv := s.state.rv
	s.state.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"apiVersion": req.apiVersion(),
		"kind":       req.info.kind + "List",
		"metadata":   map[string]any{"resourceVersion": strconv.FormatInt(rv, 10)},
		"items":      items,
	})
}

// watchEvent is one event on the wire.
type watchEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// watch streams the events after the resourceVersion asked for; from no
// version, "0" or with sendInitialEvents=true, the objects first as ADDED
// events (then, for a watch-list, the bookmark that ends them). It ends
// when the client goes, timeoutSeconds pass or the server stops.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, req request) {
	q := r.URL.Query()
	sel, err := newSelector(q, req)
	if err != nil {
		s.refuse(w, r, http.StatusBadRequest, err.Error())
		return
	}
	watchList := q.Get("sendInitialEvents") == "true"
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	rv := q.Get("resourceVersion")
	var from int64
	if !watchList && rv != "" && rv != "0" {
		if from, err = strconv.ParseInt(rv, 10, 64); err != nil {
			s.refuse(w, r, http.StatusBadRequest, "resourceVersion: "+err.Error())
			return
		}
	}
	ctx := r.Context()
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := &watchStream{w: w, enc: json.NewEncoder(w), sel: sel}
	initial := watchList || rv == "" || rv == "0"
	s.stream(ctx, out, from, initial, watchList && bookmarks, bookmarks)
}

// stream sends the events; see watch.
func (s *Server) stream(ctx context.Context, out *watchStream, from int64, initial, endInitial, bookmarks bool) {
	st := s.state
	st.mu.Lock()
	var send []watchEvent
	if initial {
		for _, k := range sortedKeys(st.objects) {
			if o := st.objects[k].served; out.sel.matches(k, o) {
				send = append(send, watchEvent{Type: "ADDED", Object: out.sel.at(o)})
			}
		}
		from = st.rv
	}
	if endInitial {
		send = append(send, out.bookmark(from, true))
	}
	tick := time.NewTicker(s.bookmarkEvery)
	defer tick.Stop()
	bookmarkDue := false
	for {
		var gone bool
		send, from, gone = st.eventsAfter(from, out.sel, send)
		if bookmarkDue && !gone {
			// After the events: a bookmark says every event up to its
			// version has been sent.
			send = append(send, out.bookmark(from, false))
		}
		changed := st.changed
		st.mu.Unlock()
		if !out.send(send) || gone {
			return
		}
		send, bookmarkDue = send[:0], false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			bookmarkDue = bookmarks
		case <-changed:
		}
		st.mu.Lock()
	}
}

// eventsAfter appends the events after from that sel matches, and says
// from where the next look goes on; gone is true, with an ERROR event
// appended, when the log no longer reaches back to from. Called with
// s.mu held.
func (st *state) eventsAfter(from int64, sel selector, send []watchEvent) ([]watchEvent, int64, bool) {
	if from < st.floor {
		err := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, st.floor))
		return append(send, watchEvent{Type: "ERROR", Object: statusOf(err)}), from, true
	}
	for _, ev := range st.events {
		if ev.rv > from && sel.matches(ev.key, ev.obj) {
			send = append(send, watchEvent{Type: ev.typ, Object: sel.at(ev.obj)})
		}
	}
	return send, max(from, st.rv), false
}

// watchStream writes one watch's events, a JSON document each.
type watchStream struct {
	w   http.ResponseWriter
	enc *json.Encoder
	sel selector
}

func (o *watchStream) send(events []watchEvent) bool {
	for _, ev := range events {
		if o.enc.Encode(ev) != nil {
			return false
		}
	}
	if f, ok := o.w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// bookmark is an object with nothing but the resourceVersion, and for
// the end of a watch-list's initial events, the annotation that says so.
func (o *watchStream) bookmark(rv int64, endsInitial bool) watchEvent {
	meta := map[string]any{"resourceVersion": strconv.FormatInt(rv, 10)}
	if endsInitial {
		meta["annotations"] = map[string]any{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watchEvent{Type: "BOOKMARK", Object: map[string]any{
		"apiVersion": o.sel.req.apiVersion(), "kind": o.sel.req.info.kind, "metadata": meta,
	}}
}
