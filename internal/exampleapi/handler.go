package exampleapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	authzv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/kubernetes/scheme"
)

// request is a GET of a collection: a resource at a version, in one
// namespace or all ("").
type request struct {
	info      *kindInfo
	version   string
	namespace string
}

func (r request) apiVersion() string {
	return schema.GroupVersion{Group: r.info.id.group, Version: r.version}.String()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	if s.LogRequests {
		s.logf("%s %s", r.Method, r.URL)
	}
	if path == "apis/authorization.k8s.io/v1/selfsubjectaccessreviews" && r.Method == http.MethodPost {
		s.review(w, r)
		return
	}
	if r.Method != http.MethodGet {
		s.refuse(w, r, http.StatusMethodNotAllowed, "this stand-in API server is read-only: edit the YAML files in "+s.dir+" instead")
		return
	}
	switch {
	case path == "healthz" || path == "livez" || path == "readyz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok"))
	case path == "version":
		writeJSON(w, http.StatusOK, &version.Info{Major: "1", Minor: "37", GitVersion: "v1.37.0-exampleapi", Platform: "linux/amd64"})
	case path == "api":
		writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case path == "apis":
		writeJSON(w, http.StatusOK, s.groups())
	default:
		if list, ok := s.resources(path); ok {
			writeJSON(w, http.StatusOK, list)
			return
		}
		req, ok := s.route(path)
		if !ok {
			s.refuse(w, r, http.StatusNotFound, "the server could not find the requested resource")
			return
		}
		if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
			s.watch(w, r, req)
			return
		}
		s.list(w, r, req)
	}
}

// route reads a collection's path: api/v1/[namespaces/NS/]R or
// apis/G/V/[namespaces/NS/]R.
func (s *Server) route(path string) (request, bool) {
	seg := strings.Split(path, "/")
	var group, ver string
	switch {
	case len(seg) >= 3 && seg[0] == "api":
		ver, seg = seg[1], seg[2:]
	case len(seg) >= 4 && seg[0] == "apis":
		group, ver, seg = seg[1], seg[2], seg[3:]
	default:
		return request{}, false
	}
	ns := ""
	if len(seg) == 3 && seg[0] == "namespaces" {
		ns, seg = seg[1], seg[2:]
	}
	if len(seg) != 1 {
		return request{}, false
	}
	s.state.mu.Lock()
	defer s.state.mu.Unlock()
	info, ok := s.state.kinds[resourceID{group: group, resource: seg[0]}]
	if !ok || !info.versions[ver] || (ns != "" && !info.namespaced) {
		return request{}, false
	}
	return request{info: info, version: ver, namespace: ns}, true
}

// groups is the discovery of the named groups served.
func (s *Server) groups() *metav1.APIGroupList {
	s.state.mu.Lock()
	defer s.state.mu.Unlock()
	versions := map[string]map[string]bool{}
	for id, info := range s.state.kinds {
		if id.group == "" {
			continue
		}
		if versions[id.group] == nil {
			versions[id.group] = map[string]bool{}
		}
		for v := range info.versions {
			versions[id.group][v] = true
		}
	}
	out := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range sortedNames(versions) {
		group := metav1.APIGroup{Name: g}
		// The newest version first, as the API server prefers it.
		vs := sortedNames(versions[g])
		sort.Sort(sort.Reverse(sort.StringSlice(vs)))
		for _, v := range vs {
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		group.PreferredVersion = group.Versions[0]
		out.Groups = append(out.Groups, group)
	}
	return out
}

// resources is the discovery of one group version: api/v1 or apis/G/V.
func (s *Server) resources(path string) (*metav1.APIResourceList, bool) {
	seg := strings.Split(path, "/")
	var group, ver string
	switch {
	case len(seg) == 2 && seg[0] == "api":
		ver = seg[1]
	case len(seg) == 3 && seg[0] == "apis":
		group, ver = seg[1], seg[2]
	default:
		return nil, false
	}
	gv := schema.GroupVersion{Group: group, Version: ver}.String()
	out := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv}
	s.state.mu.Lock()
	defer s.state.mu.Unlock()
	for id, info := range s.state.kinds {
		if id.group == group && info.versions[ver] {
			out.APIResources = append(out.APIResources, metav1.APIResource{
				Name: id.resource, Kind: info.kind, Namespaced: info.namespaced, Verbs: metav1.Verbs{"get", "list", "watch"},
			})
		}
	}
	if len(out.APIResources) == 0 {
		return nil, false
	}
	sort.Slice(out.APIResources, func(i, j int) bool { return out.APIResources[i].Name < out.APIResources[j].Name })
	return out, true
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// review answers a SelfSubjectAccessReview, which the DNS server sends to
// tell a missing RBAC rule from an API server that is down: everything is
// allowed here, as there is no one to tell apart.
func (s *Server) review(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return
	}
	// JSON or protobuf, as the client sends it; the answer is JSON, which
	// every client accepts.
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	rev, ok := obj.(*authzv1.SelfSubjectAccessReview)
	if err != nil || !ok {
		s.refuse(w, r, http.StatusBadRequest, fmt.Sprintf("cannot decode a SelfSubjectAccessReview: %v", err))
		return
	}
	rev.Kind, rev.APIVersion = "SelfSubjectAccessReview", authzv1.SchemeGroupVersion.String()
	rev.Status = authzv1.SubjectAccessReviewStatus{Allowed: true, Reason: "the stand-in API server of make run allows every read"}
	writeJSON(w, http.StatusCreated, rev)
}

// refuse answers with a metav1.Status, as the API server does.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, message string) {
	st := statusOf(apierrors.NewGenericServerResponse(code, r.Method, schema.GroupResource{}, "", message, 0, false))
	st.Message = message
	writeJSON(w, code, st)
}

func statusOf(err *apierrors.StatusError) *metav1.Status {
	st := err.ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	return &st
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
