package translate

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// backendOf is the backend named name of any IR route, nil without one.
func backendOf(r *Result, name string) *ir.Backend {
	for _, g := range r.IR.Gateways {
		for _, l := range g.Listeners {
			for _, hr := range l.HTTPRoutes {
				if hr.Backends != nil {
					for _, b := range hr.Backends.Backends {
						if b.Name == name {
							return b
						}
					}
				}
			}
		}
	}
	return nil
}

// An incremental run follows the Pods an EndpointSelector XBackend
// selects and the XBackend itself, without a full translation: a Pod that
// stops being ready leaves the backend's endpoints, a Pod whose labels
// start matching joins them, and an edited XBackend is read again; each
// run equals a full translation of the same snapshot.
func TestIncrementalXBackendFollowsPodsAndEdits(t *testing.T) {
	res, _, err := file.Load("testdata/103-xbackend-endpointselector.in.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := NewCache()
	run := func(what string, res *resources.Resources) *Result {
		t.Helper()
		res.Sort()
		got, err := c.Run(res, gatewayapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Run(res, gatewayapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if d := diffOutputs(got, want, nil, nil); d != "" {
			t.Fatalf("%s: incremental and full differ: %s", what, d)
		}
		return got.Result
	}
	addrs := func(r *Result) []string {
		var out []string
		for _, e := range backendOf(r, "xbackend/default/sticky").Endpoints {
			out = append(out, e.Address)
		}
		return out
	}
	first := run("first", res)
	if got, want := addrs(first), []string{"10.1.0.1", "10.1.0.2", "fd00::1"}; !slices.Equal(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}

	// web-2 is no longer ready; other-app now has the selected labels.
	next := *res
	next.Pods = nil
	for _, p := range res.Pods {
		switch {
		case p.Namespace == "default" && p.Name == "web-2":
			p = p.DeepCopy()
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		case p.Name == "other-app":
			p = p.DeepCopy()
			p.Labels = map[string]string{"app": "web"}
		}
		next.Pods = append(next.Pods, p)
	}
	r := run("pods changed", &next)
	if full, _ := c.gw.LastRun(); full {
		t.Errorf("a Pod change started the translation over")
	}
	if got, want := addrs(r), []string{"10.1.0.1", "10.1.0.5", "fd00::1"}; !slices.Equal(got, want) {
		t.Errorf("after the Pod changes: endpoints %v, want %v", got, want)
	}

	// The XBackend's port changes.
	last := next
	last.XBackends = nil
	for _, xb := range next.XBackends {
		if xb.Name == "sticky" {
			xb = xb.DeepCopy()
			xb.Spec.Port.Number = gwapixv1alpha1.PortNumber(9999)
		}
		last.XBackends = append(last.XBackends, xb)
	}
	r = run("XBackend edited", &last)
	if full, _ := c.gw.LastRun(); full {
		t.Errorf("an XBackend change started the translation over")
	}
	if b := backendOf(r, "xbackend/default/sticky"); b == nil || b.Endpoints[0].Port != 9999 {
		t.Errorf("after the XBackend edit: backend %+v, want port 9999", b)
	}
}

// An ExternalHostname XBackend may not name localhost or a name under it
// (RFC 6761: they resolve to the loopback, where the proxy itself
// listens; on a Gateway listener's port a request would loop through the
// gateway): the XBackend is refused, the route that uses it is
// ResolvedRefs=False BackendNotFound with the reason, and its backend is
// not rendered. A name that merely starts with "localhost." is a name
// like any other.
func TestXBackendLoopbackNamesRefused(t *testing.T) {
	for _, c := range []struct {
		host    string
		refused bool
	}{{"localhost", true}, {"api.localhost", true}, {"a.b.localhost", true}, {"localhost.example.org", false}, {"notlocalhost", false}} {
		res, _, err := file.Load("testdata/102-xbackend-external.in.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for i, xb := range res.XBackends {
			if xb.Name == "plain" {
				xb = xb.DeepCopy()
				xb.Spec.ExternalHostname.Hostname = gwapiv1.PreciseHostname(c.host)
				res.XBackends[i] = xb
			}
		}
		out, err := Run(res, gatewayapi.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := out.Result.Status.Routes[gatewayapi.RouteKey{Kind: gatewayapi.KindHTTPRoute, Namespace: "default", Name: "app"}]
		if st == nil || len(st.Parents) != 1 {
			t.Fatalf("%s: route status %+v", c.host, st)
		}
		cond := meta.FindStatusCondition(st.Parents[0].Conditions, "ResolvedRefs")
		rendered := backendOf(out.Result, "xbackend/default/plain") != nil
		if c.refused {
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "BackendNotFound" || !strings.Contains(cond.Message, "is a loopback name") || rendered {
				t.Errorf("%s: ResolvedRefs %+v, backend rendered %v; want False BackendNotFound \"is a loopback name\", not rendered", c.host, cond, rendered)
			} else {
				t.Logf("%s: %s", c.host, cond.Message)
			}
		} else if cond == nil || cond.Status != metav1.ConditionTrue || !rendered {
			t.Errorf("%s: ResolvedRefs %+v, backend rendered %v; want True, rendered", c.host, cond, rendered)
		}
	}
}
