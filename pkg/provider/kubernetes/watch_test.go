package kubernetes

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// TestWatchNamespaces: the controller's namespace is always watched, the
// list is sorted and deduplicated, an empty name is refused, and an empty
// list watches every namespace; references outside the list are dropped
// before anything reads them.
func TestWatchNamespaces(t *testing.T) {
	c := Config{RestConfig: &rest.Config{}, Namespace: "xds-system", WatchNamespaces: []string{"b", "a", "b"}}
	if err := c.Default(); err != nil {
		t.Fatal(err)
	}
	if w := []string{"a", "b", "xds-system"}; !slices.Equal(c.WatchNamespaces, w) {
		t.Errorf("WatchNamespaces %v, want %v", c.WatchNamespaces, w)
	}
	if !c.Watches("a") || !c.Watches("xds-system") || c.Watches("c") {
		t.Error("Watches disagrees with the list")
	}
	opts := cacheOptions(nil, c.WatchNamespaces)
	if len(opts.DefaultNamespaces) != 3 {
		t.Errorf("cache namespaces %v", opts.DefaultNamespaces)
	}
	refs := []types.NamespacedName{{Namespace: "a", Name: "x"}, {Namespace: "c", Name: "y"}, {Namespace: "xds-system", Name: "z"}}
	if got := watchedOnly(&c, refs); len(got) != 2 || got[0].Namespace != "a" || got[1].Namespace != "xds-system" {
		t.Errorf("watchedOnly %v", got)
	}

	all := Config{RestConfig: &rest.Config{}, Namespace: "xds-system"}
	if err := all.Default(); err != nil {
		t.Fatal(err)
	}
	if all.WatchNamespaces != nil || !all.Watches("anything") || cacheOptions(nil, nil).DefaultNamespaces != nil {
		t.Error("an empty list must watch every namespace")
	}

	bad := Config{RestConfig: &rest.Config{}, Namespace: "xds-system", WatchNamespaces: []string{"a", ""}}
	if err := bad.Default(); err == nil {
		t.Error("an empty namespace name was accepted")
	}
}

// TestSecretsWatchedByType: the Secret informer asks the API server for
// Secrets of type kubernetes.io/tls only.
func TestSecretsWatchedByType(t *testing.T) {
	for obj, by := range cacheOptions(nil, nil).ByObject {
		if _, ok := obj.(*corev1.Secret); ok {
			if by.Field == nil || by.Field.String() != "type=kubernetes.io/tls" {
				t.Errorf("Secret field selector %v", by.Field)
			}
			return
		}
	}
	t.Error("no cache options for Secrets")
}
