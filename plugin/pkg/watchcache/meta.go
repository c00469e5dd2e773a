package watchcache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// objectMeta is the little of ObjectMeta the informer machinery needs (keys
// and resource versions). Cached objects embed it instead of
// metav1.ObjectMeta, whose empty value alone costs a few hundred bytes per
// object: at 100k endpoints that is the difference that matters.
type objectMeta struct {
	namespace       string
	name            string
	resourceVersion string
}

var (
	_ metav1.Object  = (*objectMeta)(nil)
	_ runtime.Object = (*Service)(nil)
)

func (m *objectMeta) GetNamespace() string                  { return m.namespace }
func (m *objectMeta) SetNamespace(ns string)                { m.namespace = ns }
func (m *objectMeta) GetName() string                       { return m.name }
func (m *objectMeta) SetName(name string)                   { m.name = name }
func (m *objectMeta) GetResourceVersion() string            { return m.resourceVersion }
func (m *objectMeta) SetResourceVersion(rv string)          { m.resourceVersion = rv }
func (m *objectMeta) GetGenerateName() string               { return "" }
func (m *objectMeta) SetGenerateName(string)                {}
func (m *objectMeta) GetUID() types.UID                     { return "" }
func (m *objectMeta) SetUID(types.UID)                      {}
func (m *objectMeta) GetGeneration() int64                  { return 0 }
func (m *objectMeta) SetGeneration(int64)                   {}
func (m *objectMeta) GetSelfLink() string                   { return "" }
func (m *objectMeta) SetSelfLink(string)                    {}
func (m *objectMeta) GetCreationTimestamp() metav1.Time     { return metav1.Time{} }
func (m *objectMeta) SetCreationTimestamp(metav1.Time)      {}
func (m *objectMeta) GetDeletionTimestamp() *metav1.Time    { return nil }
func (m *objectMeta) SetDeletionTimestamp(*metav1.Time)     {}
func (m *objectMeta) GetDeletionGracePeriodSeconds() *int64 { return nil }
func (m *objectMeta) SetDeletionGracePeriodSeconds(*int64)  {}
func (m *objectMeta) GetLabels() map[string]string          { return nil }
func (m *objectMeta) SetLabels(map[string]string)           {}
func (m *objectMeta) GetAnnotations() map[string]string {
	if m.endsInitialEvents() {
		return initialEventsEnd
	}
	return nil
}
func (m *objectMeta) SetAnnotations(map[string]string)              {}
func (m *objectMeta) GetFinalizers() []string                       { return nil }
func (m *objectMeta) SetFinalizers([]string)                        {}
func (m *objectMeta) GetOwnerReferences() []metav1.OwnerReference   { return nil }
func (m *objectMeta) SetOwnerReferences([]metav1.OwnerReference)    {}
func (m *objectMeta) GetManagedFields() []metav1.ManagedFieldsEntry { return nil }
func (m *objectMeta) SetManagedFields([]metav1.ManagedFieldsEntry)  {}

// GetObjectKind implements runtime.Object; cached objects carry no type meta.
func (m *objectMeta) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// Key is the store key of the object: namespace/name.
func (m *objectMeta) Key() string { return m.namespace + "/" + m.name }

// Namespace of the object.
func (m *objectMeta) Namespace() string { return m.namespace }

// Name of the object.
func (m *objectMeta) Name() string { return m.name }

func newMeta(om *metav1.ObjectMeta) objectMeta {
	m := objectMeta{namespace: om.Namespace, name: om.Name, resourceVersion: om.ResourceVersion}
	if om.Name == "" && om.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
		m.markInitialEventsEnd()
	}
	return m
}

// A watch that streams the initial list (watch-list) ends it with a
// bookmark annotated k8s.io/initial-events-end, which the reflector reads
// through GetAnnotations. Cached objects keep no annotations, so a
// converted bookmark says it by a namespace no object can have (a NUL is
// not allowed in one), on an object with no name: no byte more per
// object for something only bookmarks, which are never stored, carry.
const initialEventsEndMark = "\x00initial-events-end"

var initialEventsEnd = map[string]string{metav1.InitialEventsAnnotationKey: "true"}

func (m *objectMeta) markInitialEventsEnd() { m.namespace = initialEventsEndMark }

// isBookmark tells whether m is the meta of a watch's bookmark: the one
// that ends the initial events, or the periodic one the API server sends
// about every minute (a resource version and nothing else). The API server
// stores no object without a name, so a nameless one is no object to warn
// of.
func (m *objectMeta) isBookmark() bool { return m.name == "" }

// endsInitialEvents tells whether m is the meta of that bookmark.
func (m *objectMeta) endsInitialEvents() bool {
	return m.name == "" && m.namespace == initialEventsEndMark
}
