package exampleapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// ReadDir reads the objects of the YAML files in dir, in file name order
// (as `kubectl create -f dir` does).
func ReadDir(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []*unstructured.Unstructured
	for _, f := range files {
		objs, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// ReadFile reads the objects of one YAML (or JSON) file, documents
// separated by "---".
func ReadFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(o.Object) > 0 {
			out = append(out, o)
		}
	}
}

// resourceID names a served resource, whatever its version: a custom
// resource's versions (ServiceImport's v1alpha1 and v1beta1) are one set
// of objects, served at each version with its apiVersion rewritten, as
// the API server does for a CustomResourceDefinition without conversion.
type resourceID struct {
	group, resource string
}

// clusterScoped are the kinds the examples may hold that have no
// namespace.
var clusterScoped = map[string]bool{"Namespace": true, "ClusterProperty": true, "Node": true, "ServiceCIDR": true}

// resourceOf is the plural, lower-case resource name of a kind, as the API
// server names the built-in kinds and CRDs name theirs.
func resourceOf(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "y"):
		return strings.TrimSuffix(k, "y") + "ies"
	case strings.HasSuffix(k, "s"):
		return k + "es"
	}
	return k + "s"
}

// objectKey is where an object lives: its resource, namespace and name.
type objectKey struct {
	resourceID
	namespace, name string
}

func (k objectKey) String() string {
	return strings.TrimPrefix(k.group+"/", "/") + k.resource + " " + strings.TrimPrefix(k.namespace+"/", "/") + k.name
}

// checkObject says what is wrong with an object the server cannot serve.
func checkObject(o *unstructured.Unstructured) error {
	switch {
	case o.GetKind() == "" || o.GetAPIVersion() == "":
		return errors.New("an object without apiVersion or kind")
	case o.GetName() == "":
		return fmt.Errorf("a %s without a name", o.GetKind())
	case clusterScoped[o.GetKind()] && o.GetNamespace() != "":
		return fmt.Errorf("%s %s has a namespace, but a %s has none", o.GetKind(), o.GetName(), o.GetKind())
	}
	return nil
}

func keyOf(o *unstructured.Unstructured) objectKey {
	gv := o.GroupVersionKind()
	ns := o.GetNamespace()
	if ns == "" && !clusterScoped[gv.Kind] {
		ns = "default"
	}
	return objectKey{resourceID: resourceID{group: gv.Group, resource: resourceOf(gv.Kind)}, namespace: ns, name: o.GetName()}
}
