package proxystatus

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// pod is a pod of namespace/name with labels.
func pod(namespace, name string, labels map[string]string) client.Object {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}
}

// The chart's controller pod labels (charts/xds-controller
// xds-controller.selectorLabels), with the release's instance.
func chartLabels(release string) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "xds-controller", "app.kubernetes.io/instance": release, "app.kubernetes.io/component": "controller"}
}

// TestFindControllerNamespace: the controller's namespace is the one
// holding pods with the chart's controller labels, whatever the release
// name; Envoy pods (name envoy) and other pods do not count; none or
// several namespaces are errors that list what was found and name the
// caller's flag.
func TestFindControllerNamespace(t *testing.T) {
	others := []client.Object{
		pod("xds-system", "envoy-abc", map[string]string{"app.kubernetes.io/name": "envoy", "app.kubernetes.io/component": "proxy"}),
		pod("apps", "web-1", map[string]string{"app.kubernetes.io/name": "web"}),
		pod("tools", "not-a-controller", map[string]string{"app.kubernetes.io/name": "xds-controller"}),
	}
	for _, c := range []struct {
		name    string
		pods    []client.Object
		want    string
		wantErr []string
	}{
		{"one replica", []client.Object{pod("xds-system", "xds-controller-1", chartLabels("xds-controller"))}, "xds-system", nil},
		{"two replicas, another release name", []client.Object{
			pod("edge", "gw-xds-controller-2", chartLabels("gw")), pod("edge", "gw-xds-controller-1", chartLabels("gw")),
		}, "edge", nil},
		{"none", nil, "", []string{"no controller pod", "app.kubernetes.io/component=controller,app.kubernetes.io/name=xds-controller", "--flag"}},
		{"two namespaces", []client.Object{
			pod("team-b", "xds-controller-x", chartLabels("b")), pod("team-a", "xds-controller-z", chartLabels("a")), pod("team-a", "xds-controller-y", chartLabels("a")),
		}, "", []string{"in 2 namespaces: team-a (xds-controller-y, xds-controller-z); team-b (xds-controller-x); name one with --flag"}},
	} {
		cl := fake.NewClientBuilder().WithObjects(append(c.pods, others...)...).Build()
		got, err := FindControllerNamespace(context.Background(), cl, "--flag")
		if got != c.want {
			t.Errorf("%s: namespace %q, want %q (err %v)", c.name, got, c.want, err)
		}
		if (err != nil) != (c.wantErr != nil) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
		}
		for _, w := range c.wantErr {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestFindControllerNamespaceForbidden: a refused list says which RBAC it
// needs and which flag avoids it, and wraps the API server's error.
func TestFindControllerNamespaceForbidden(t *testing.T) {
	refused := errors.New("pods is forbidden")
	cl := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return refused },
	}).Build()
	_, err := FindControllerNamespace(context.Background(), cl, "-n")
	if !errors.Is(err, refused) || !strings.Contains(err.Error(), "needs list on pods cluster-wide; or name its namespace with -n") {
		t.Errorf("error %v", err)
	}
}
