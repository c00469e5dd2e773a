package main

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/schemadns/schemadns/internal/exampleapi"
)

// applyDir creates every object of the YAML files in dir (in file name
// order), like `kubectl create -f dir`, and then writes the status of those
// that carry one (pods: nothing schedules them here, so their IPs are set
// by hand). Objects that exist already are left alone.
func applyDir(ctx context.Context, cfg *rest.Config, dir string) (int, error) {
	objs, err := exampleapi.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return 0, fmt.Errorf("discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for n, o := range objs {
		if err := create(ctx, dyn, mapper, o); err != nil {
			return n, fmt.Errorf("%s: %s %s/%s: %w", dir, o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return len(objs), nil
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
