package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
)

// apiServer is the fake API server of one run: plain HTTP on loopback,
// serving the encoded cluster. Lists return the initial state; a watch
// continues from the resourceVersion asked for, through the events
// released so far; a watch-list (sendInitialEvents=true) streams the
// initial state as ADDED events and a bookmark, then the events. Nothing
// is released until feed is called: then every update goes out on each
// open EndpointSlice watch at once, as fast as the client reads.
type apiServer struct {
	enc      *encoded
	srv      *http.Server
	addr     string
	released chan struct{}

	mu       sync.Mutex
	requests map[string]int // "GET endpointslices watch-list" → count, for the report
	unknown  []string       // paths served a 404

	firstByte, lastByte atomic.Int64 // since begin (ns), the first and last update byte written
	fedBytes            atomic.Int64
	logf                func(string, ...any)
}

// chunk is how much of the event log one write sends.
const chunk = 256 << 10

func startAPIServer(enc *encoded, logf func(string, ...any)) (*apiServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &apiServer{enc: enc, addr: l.Addr().String(), released: make(chan struct{}), requests: map[string]int{}, logf: logf}
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
	go a.srv.Serve(l)
	return a, nil
}

func (a *apiServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if a.srv.Shutdown(ctx) != nil {
		a.srv.Close()
	}
}

// feed releases every update.
func (a *apiServer) feed() { close(a.released) }

func (a *apiServer) count(what string) {
	a.mu.Lock()
	a.requests[what]++
	a.mu.Unlock()
}

func (a *apiServer) counts() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]int{}
	for k, v := range a.requests {
		out[k] = v
	}
	return out
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	if res, ok := a.enc.resources[path]; ok && r.Method == http.MethodGet {
		q := r.URL.Query()
		if sel := q.Get("labelSelector") + q.Get("fieldSelector"); sel != "" && res.count > 0 {
			// Selectors are not applied: none should be sent here but the
			// stock plugin's on pods, of which there are none.
			a.logf("%s %s: selectors are not supported, answering with every object", r.Method, r.URL)
		}
		if !strings.Contains(r.Header.Get("Accept"), protobufType) {
			a.refuse(w, r, http.StatusNotAcceptable, "this fake API server speaks only protobuf for lists and watches")
			return
		}
		if q.Get("watch") == "true" || q.Get("watch") == "1" {
			a.watch(w, r, res)
			return
		}
		a.count("LIST " + res.name)
		w.Header().Set("Content-Type", protobufType)
		w.Write(res.list)
		return
	}
	switch {
	case path == "readyz" || path == "livez" || path == "healthz":
		a.count("GET /" + path)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok")
	case path == "version":
		a.count("GET /version")
		writeJSON(w, http.StatusOK, &version.Info{Major: "1", Minor: "36", GitVersion: "v1.36.3-absorb", Platform: "linux/amd64"})
	case path == "api":
		a.count("GET /api")
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case path == "apis":
		a.count("GET /apis")
		writeJSON(w, http.StatusOK, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{
			group("discovery.k8s.io", "v1"), group("authorization.k8s.io", "v1"), group("authentication.k8s.io", "v1"),
		}})
	case path == "api/v1" || path == "apis/discovery.k8s.io/v1":
		a.count("GET /" + path)
		writeJSON(w, http.StatusOK, a.resourceList(path))
	case path == "apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && r.Method == http.MethodPost:
		a.count("POST selfsubjectaccessreviews")
		a.review(w, r, func(obj runtime.Object) bool {
			rev, ok := obj.(*authzv1.SelfSubjectAccessReview)
			if ok {
				rev.Status = authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: "the absorption benchmark's fake API server allows everything"}
			}
			return ok
		}, authzv1.SchemeGroupVersion)
	case path == "apis/authentication.k8s.io/v1/selfsubjectreviews" && r.Method == http.MethodPost:
		a.count("POST selfsubjectreviews")
		a.review(w, r, func(obj runtime.Object) bool {
			rev, ok := obj.(*authnv1.SelfSubjectReview)
			if ok {
				rev.Status.UserInfo = authnv1.UserInfo{Username: "absorb"}
			}
			return ok
		}, authnv1.SchemeGroupVersion)
	default:
		// networking.k8s.io (ServiceCIDRs) and anything else: not served,
		// as an API server without the group answers.
		a.mu.Lock()
		a.unknown = append(a.unknown, r.Method+" "+r.URL.Path)
		a.mu.Unlock()
		a.count("404 " + r.Method + " /" + path)
		a.logf("fake API server: %s %s is not served: 404", r.Method, r.URL)
		a.refuse(w, r, http.StatusNotFound, "the server could not find the requested resource")
	}
}

func group(name, v string) metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/" + v, Version: v}
	return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// resourceList is the discovery document of a group version: the
// resources this server serves in it.
func (a *apiServer) resourceList(path string) *metav1.APIResourceList {
	gv := strings.TrimPrefix(strings.TrimPrefix(path, "apis/"), "api/")
	out := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	for p, res := range a.enc.resources {
		if strings.HasPrefix(p, path+"/") {
			kind := map[string]string{"services": "Service", "pods": "Pod", "namespaces": "Namespace", "endpointslices": "EndpointSlice"}[res.name]
			out.APIResources = append(out.APIResources, metav1.APIResource{Name: res.name, Namespaced: res.name != "namespaces", Kind: kind,
				Verbs: metav1.Verbs{"get", "list", "watch"}})
		}
	}
	return out
}

// review answers a self review: the object sent, its status filled in.
func (a *apiServer) review(w http.ResponseWriter, r *http.Request, fill func(runtime.Object) bool, gv schema.GroupVersion) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil || !fill(obj) {
		a.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("cannot decode the review: %v", err))
		return
	}
	a.respond(w, r, http.StatusCreated, obj, gv)
}

// respond writes obj in protobuf when the client accepts it, else JSON.
func (a *apiServer) respond(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, gv schema.GroupVersion) {
	if strings.Contains(r.Header.Get("Accept"), protobufType) {
		w.Header().Set("Content-Type", protobufType)
		w.WriteHeader(code)
		w.Write(encodeObject(obj, gv))
		return
	}
	b, err := runtime.Encode(scheme.Codecs.LegacyCodec(gv), obj)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	w.Write(b)
}

// refuse answers with a metav1.Status, as the API server does.
func (a *apiServer) refuse(w http.ResponseWriter, r *http.Request, code int, message string) {
	st := &apierrors.NewGenericServerResponse(code, r.Method, schema.GroupResource{}, "", message, 0, false).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	a.respond(w, r, code, st, metav1.SchemeGroupVersion)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", runtime.ContentTypeJSON)
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// watch streams res's events after the resourceVersion asked for, or
// with sendInitialEvents=true the initial state first, until the client
// goes, timeoutSeconds pass or the server closes.
func (a *apiServer) watch(w http.ResponseWriter, r *http.Request, res *resource) {
	q := r.URL.Query()
	rv, start := q.Get("resourceVersion"), 0
	// A watch-list, and a watch from no version or "any" (0), begins with
	// the state as ADDED events; only a watch-list ends them with a
	// bookmark.
	watchList := q.Get("sendInitialEvents") == "true"
	initial := watchList || rv == "" || rv == "0"
	switch {
	case watchList:
		a.count("WATCH-LIST " + res.name)
		if rv != "" && rv != "0" {
			// A client that comes back after a relist asks from where it
			// was; the initial state is still the state at the base
			// version, and every event follows it.
			a.logf("watch-list of %s from resourceVersion %s: streaming the initial state and every event again", res.name, rv)
		}
	case initial:
		a.count("WATCH " + res.name + " from the state")
	default:
		n, err := strconv.ParseInt(rv, 10, 64)
		at, ok := res.events.from(n)
		if err != nil || !ok {
			a.count("WATCH " + res.name + " (410 Gone)")
			st := &apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %s", rv)).ErrStatus
			st.Kind, st.APIVersion = "Status", "v1"
			a.respond(w, r, http.StatusGone, st, metav1.SchemeGroupVersion)
			return
		}
		start = at
		a.count("WATCH " + res.name)
	}
	flusher := w.(http.Flusher)
	w.Header().Set("Content-Type", protobufType+";stream=watch")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()
	if t, err := strconv.Atoi(q.Get("timeoutSeconds")); err == nil && t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(t)*time.Second)
		defer cancel()
	}
	if initial {
		for _, f := range res.added {
			if _, err := w.Write(f); err != nil {
				return
			}
		}
		if watchList {
			if _, err := w.Write(res.bookmark); err != nil {
				return
			}
		}
		flusher.Flush()
	}
	if len(res.events.ends) == 0 {
		<-ctx.Done()
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-a.released:
	}
	buf := res.events.buf
	for off := start; off < len(buf); off += chunk {
		a.firstByte.CompareAndSwap(0, int64(time.Since(begin)))
		n, err := w.Write(buf[off:min(off+chunk, len(buf))])
		a.fedBytes.Add(int64(n))
		if err != nil {
			return
		}
		flusher.Flush()
	}
	a.lastByte.Store(int64(time.Since(begin)))
	<-ctx.Done()
}
