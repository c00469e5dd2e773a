package kubeapi

import (
	"context"
	_ "embed" // the ClusterProperty CRD
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

// MCS API types, as served once Start returns (ServiceImports in
// v1alpha1 unless Options.ServiceImportVersions leaves it out).
var (
	ServiceImports = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
	ServiceExports = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"}
	// ClusterProperties are served with Options.ClusterProperties.
	ClusterProperties = schema.GroupVersionResource{Group: "about.k8s.io", Version: "v1alpha1", Resource: "clusterproperties"}
)

// ClusterPropertyCRD is a minimal CRD of KEP-2149's ClusterProperty.
//
//go:embed clusterproperty-crd.yaml
var ClusterPropertyCRD []byte

// crdResource is where CRDs are created. The dynamic client stands in for
// the apiextensions clientset, which the module does not require.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installCRDs creates the CRDs that sigs.k8s.io/mcs-api ships (the
// ServiceImport one with the versions asked for) and the ClusterProperty
// one when asked, and waits until their resources are served.
func (c *Cluster) installCRDs(ctx context.Context) error {
	crds, served, err := c.crds()
	if err != nil {
		return err
	}
	for _, obj := range crds {
		if err := c.createCRD(ctx, obj); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadyTimeout)
	defer cancel()
	for _, gvr := range served {
		if err := c.waitServed(ctx, gvr); err != nil {
			return err
		}
	}
	return nil
}

// crds are the CRDs to create, and the resources they serve.
func (c *Cluster) crds() ([]*unstructured.Unstructured, []schema.GroupVersionResource, error) {
	imports, err := withVersions(mcscrd.ServiceImportCRD, c.opts.ServiceImportVersions)
	if err != nil {
		return nil, nil, err
	}
	crds := []*unstructured.Unstructured{imports}
	served := []schema.GroupVersionResource{ServiceExports}
	for _, v := range versionsOf(imports) {
		gvr := ServiceImports
		gvr.Version = v
		served = append(served, gvr)
	}
	manifests := [][]byte{mcscrd.ServiceExportCRD}
	if c.opts.ClusterProperties {
		manifests = append(manifests, ClusterPropertyCRD)
		served = append(served, ClusterProperties)
	}
	for _, manifest := range manifests {
		obj, err := parseCRD(manifest)
		if err != nil {
			return nil, nil, err
		}
		crds = append(crds, obj)
	}
	return crds, served, nil
}

func parseCRD(manifest []byte) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(manifest, &obj.Object); err != nil {
		return nil, fmt.Errorf("parse CRD: %w", err)
	}
	return obj, nil
}

// withVersions parses a CRD and keeps the versions listed (all when none
// is); a single version kept is the stored one.
func withVersions(manifest []byte, keep []string) (*unstructured.Unstructured, error) {
	obj, err := parseCRD(manifest)
	if err != nil || len(keep) == 0 {
		return obj, err
	}
	versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
	var kept []any
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); slices.Contains(keep, name) {
			kept = append(kept, m)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("CRD %s has none of the versions %v", obj.GetName(), keep)
	}
	if len(kept) == 1 {
		kept[0].(map[string]any)["storage"] = true
	}
	if err := unstructured.SetNestedSlice(obj.Object, kept, "spec", "versions"); err != nil {
		return nil, fmt.Errorf("CRD %s: %w", obj.GetName(), err)
	}
	return obj, nil
}

// versionsOf names a CRD's versions.
func versionsOf(crd *unstructured.Unstructured) []string {
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			if name, ok := m["name"].(string); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

// createCRD creates one CRD; one that exists (a WorkDir reused with its
// etcd data) is kept.
func (c *Cluster) createCRD(ctx context.Context, obj *unstructured.Unstructured) error {
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
