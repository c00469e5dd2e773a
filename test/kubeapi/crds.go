package kubeapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	mcscrd "sigs.k8s.io/mcs-api/config/crd"
	"sigs.k8s.io/yaml"
)

// MCS API types, as served once Start returns.
var (
	ServiceImports = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
	ServiceExports = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"}
)

// crdResource is where CRDs are created. The dynamic client stands in for
// the apiextensions clientset, which the module does not require.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs that sigs.k8s.io/mcs-api ships and waits
// until their resources are served.
func (c *Cluster) installCRDs(ctx context.Context) error {
	for _, manifest := range [][]byte{mcscrd.ServiceImportCRD, mcscrd.ServiceExportCRD} {
		if err := c.createCRD(ctx, manifest); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	for _, gvr := range []schema.GroupVersionResource{ServiceImports, ServiceExports} {
		if err := c.waitServed(ctx, gvr); err != nil {
			return err
		}
	}
	return nil
}

// createCRD creates one CRD from its YAML; one that exists (a WorkDir
// reused with its etcd data) is kept.
func (c *Cluster) createCRD(ctx context.Context, manifest []byte) error {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &obj.Object); err != nil {
		return fmt.Errorf("parse CRD: %w", err)
	}
	_, err := c.dynamic.Resource(crdResource).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", obj.GetName(), err)
	}
	return nil
}

// waitServed waits until discovery lists gvr and a list of it succeeds:
// discovery alone can run ahead of the handler for a moment.
func (c *Cluster) waitServed(ctx context.Context, gvr schema.GroupVersionResource) error {
	var last error
	for {
		if last = c.served(ctx, gvr); last == nil {
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("%s not served: %w (last: %w)", gvr, err, last)
		}
	}
}

// served checks discovery and a list of gvr once.
func (c *Cluster) served(ctx context.Context, gvr schema.GroupVersionResource) error {
	list, err := c.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return fmt.Errorf("discovery: %w", err)
	}
	if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }) {
		return fmt.Errorf("discovery does not list %s yet", gvr.Resource)
	}
	if _, err := c.dynamic.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("list: %w", err)
	}
	return nil
}
