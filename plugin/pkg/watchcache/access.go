package watchcache

import (
	"context"
	"fmt"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache needs exactly these verbs, cluster-wide, on each resource it
// watches: list for the first sync and for relists, watch for changes.
var neededVerbs = []string{"list", "watch"}

// resourceGroups are the API groups of the watched resources.
var resourceGroups = map[Resources]string{
	Services:       "",
	EndpointSlices: "discovery.k8s.io",
	Namespaces:     "",
	Pods:           "",
	ServiceImports: "multicluster.x-k8s.io",
	ServiceCIDRs:   "networking.k8s.io",
}

// qualifiedResource names k the way RBAC rules and kubectl do:
// "services", "endpointslices.discovery.k8s.io".
func qualifiedResource(k Resources) string {
	if g := resourceGroups[k]; g != "" {
		return resourceNames[k] + "." + g
	}
	return resourceNames[k]
}

// accessCheckTimeout bounds a permission check; an API server that does
// not answer is reported by the list and watch calls anyway.
const accessCheckTimeout = 10 * time.Second

// checkAccess asks the API server whether this client may list and watch
// the resource cluster-wide, and reports the missing verbs in one log line
// that names the identity, the verbs and the resource. It runs when the
// resource starts being watched, and again after a call succeeds while a
// verb is still refused, to notice a permission granted since. Without it
// a missing "list" would go unnoticed while watch-list streaming works,
// until an API server without it forces a relist; and a missing "watch"
// would only show as a retry loop.
func (c *Cache) checkAccess(ctx context.Context, inf *informer) {
	defer inf.state.accessChecked()
	ctx, cancel := context.WithTimeout(ctx, accessCheckTimeout)
	defer cancel()
	var missing []string
	for _, verb := range neededVerbs {
		allowed, err := c.allowed(ctx, inf.kind, verb)
		if err != nil {
			// Old API server or no authorizer: the calls will tell.
			log.Debugf("cannot check permission to %s %s: %v", verb, qualifiedResource(inf.kind), err)
			return
		}
		if allowed {
			inf.state.allow(verb)
		} else {
			missing = append(missing, verb)
		}
	}
	if len(missing) > 0 {
		detail := fmt.Sprintf("%s may not %s %s cluster-wide", c.identity(ctx), strings.Join(missing, " or "), qualifiedResource(inf.kind))
		inf.state.deny(missing, detail, true)
	}
}

// allowed is one SelfSubjectAccessReview, which every authenticated
// identity may create.
func (c *Cache) allowed(ctx context.Context, k Resources, verb string) (bool, error) {
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: resourceGroups[k], Resource: resourceNames[k]},
	}}
	got, err := c.core.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("access review: %w", err)
	}
	return got.Status.Allowed, nil
}

// identity is the user name the API server knows this client by, for the
// log; "this server's identity" when it cannot tell.
func (c *Cache) identity(ctx context.Context) string {
	got, err := c.core.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || got.Status.UserInfo.Username == "" {
		return "this server's identity"
	}
	return fmt.Sprintf("%q", got.Status.UserInfo.Username)
}

// deny records that the API server refuses verbs on the resource and
// raises the permission_denied gauge. One line is logged per denial: a
// refused call made before the start-up check is over stays quiet, since
// the check logs every missing verb at once, and a verb already logged is
// not logged again until it has been allowed.
func (s *connState) deny(verbs []string, detail string, fromCheck bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := false
	for _, verb := range verbs {
		s.denied[verb] = true
		permissionDenied.WithLabelValues(resourceNames[s.kind], verb).Set(1)
		if !s.logged[verb] {
			fresh = true
		}
	}
	if !fresh || (!fromCheck && !s.checked) {
		return
	}
	for _, verb := range verbs {
		s.logged[verb] = true
	}
	log.Errorf("permission denied: %s; the ClusterRole bound to this server needs %s on %s (deploy/ has the rule for each option)",
		strings.TrimSuffix(detail, "."), verbList(), qualifiedResource(s.kind))
}

// allow records that verb is permitted (a call succeeded, or a check said
// so): a denial is over.
func (s *connState) allow(verb string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.logged, verb)
	if !s.denied[verb] {
		return
	}
	delete(s.denied, verb)
	permissionDenied.WithLabelValues(resourceNames[s.kind], verb).Set(0)
	log.Infof("permission to %s %s granted", verb, qualifiedResource(s.kind))
}

// accessChecked records that a permission check is over, so readiness
// cannot flip from ready to refused a moment after start-up.
func (s *connState) accessChecked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked, s.checking = true, false
}

// recheckDue tells whether a permission check should run again: a verb is
// still refused although a call just succeeded, and no check is running.
func (s *connState) recheckDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.denied) == 0 || s.checking || !s.checked {
		return false
	}
	s.checking = true
	return true
}

func verbList() string { return `"` + strings.Join(neededVerbs, `" and "`) + `"` }
