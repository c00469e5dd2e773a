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

func (m *objectMeta) GetNamespace() string                          { return m.namespace }
func (m *objectMeta) SetNamespace(ns string)                        { m.namespace = ns }
func (m *objectMeta) GetName() string                               { return m.name }
func (m *objectMeta) SetName(name string)                           { m.name = name }
func (m *objectMeta) GetResourceVersion() string                    { return m.resourceVersion }
func (m *objectMeta) SetResourceVersion(rv string)                  { m.resourceVersion = rv }
func (m *objectMeta) GetGenerateName() string                       { return "" }
func (m *objectMeta) SetGenerateName(string)                        {}
func (m *objectMeta) GetUID() types.UID                             { return "" }
func (m *objectMeta) SetUID(types.UID)                              {}
func (m *objectMeta) GetGeneration() int64                          { return 0 }
func (m *objectMeta) SetGeneration(int64)                           {}
func (m *objectMeta) GetSelfLink() string                           { return "" }
func (m *objectMeta) SetSelfLink(string)                            {}
func (m *objectMeta) GetCreationTimestamp() metav1.Time             { return metav1.Time{} }
func (m *objectMeta) SetCreationTimestamp(metav1.Time)              {}
func (m *objectMeta) GetDeletionTimestamp() *metav1.Time            { return nil }
func (m *objectMeta) SetDeletionTimestamp(*metav1.Time)             {}
func (m *objectMeta) GetDeletionGracePeriodSeconds() *int64         { return nil }
func (m *objectMeta) SetDeletionGracePeriodSeconds(*int64)          {}
func (m *objectMeta) GetLabels() map[string]string                  { return nil }
func (m *objectMeta) SetLabels(map[string]string)                   {}
func (m *objectMeta) GetAnnotations() map[string]string             { return nil }
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
	return objectMeta{namespace: om.Namespace, name: om.Name, resourceVersion: om.ResourceVersion}
}
