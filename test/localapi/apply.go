package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// applyDir creates every object of the YAML files in dir (in file name
// order), like `kubectl create -f dir`, and then writes the status of those
// that carry one (pods: nothing schedules them here, so their IPs are set
// by hand). Objects that exist already are left alone.
func applyDir(ctx context.Context, cfg *rest.Config, dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	sort.Strings(files)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	n := 0
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return n, err
		}
		for _, o := range objs {
			if err := create(ctx, dyn, mapper, o); err != nil {
				return n, fmt.Errorf("%s: %s %s/%s: %w", f, o.GetKind(), o.GetNamespace(), o.GetName(), err)
			}
			n++
		}
	}
	return n, nil
}

func readObjects(path string) ([]*unstructured.Unstructured, error) {
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

func create(ctx context.Context, dyn dynamic.Interface, mapper *restmapper.DeferredDiscoveryRESTMapper, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("map kind: %w", err)
	}
	res := dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	status, hasStatus := o.Object["status"]
	created, err := res.Create(ctx, o, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !hasStatus {
		return nil
	}
	created.Object["status"] = status
	if _, err := res.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}
