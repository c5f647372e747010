package ingress

import (
	"regexp"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
)

// reader is an annotationReader of an Ingress with annotations, in a
// class whose defaultAnnotations are defaults.
func reader(annotations, defaults map[string]string) *annotationReader {
	is := &ingressState{obj: &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ing", Annotations: annotations}},
		st: &Status{}}
	c := &Class{Params: &v1alpha1.IngressClassParameters{Spec: v1alpha1.IngressClassParametersSpec{DefaultAnnotations: defaults}}}
	return newAnnotationReader(is, c)
}

// TestAnnotationPrecedence: our key wins over ingress-nginx's; the
// Ingress's own value wins over the class's default.
func TestAnnotationPrecedence(t *testing.T) {
	a := reader(map[string]string{NginxPrefix + "ssl-redirect": "false", Prefix + "use-regex": "false"},
		map[string]string{Prefix + "ssl-redirect": "true", Prefix + "use-regex": "true"})
	if !a.boolean("ssl-redirect", "ssl-redirect") {
		t.Error("the class's xds-controller.dev/ssl-redirect lost to the Ingress's nginx key; ours is read first")
	}
	if a.boolean("use-regex", "use-regex") {
		t.Error("the Ingress's own use-regex lost to the class's default")
	}
}

// TestRewriteTarget: $n becomes \n, the whole path is replaced (its query
// kept by Envoy), a group the path lacks substitutes nothing, as an unset
// capture in ingress-nginx; other nginx variables are refused.
func TestRewriteTarget(t *testing.T) {
	a := reader(map[string]string{NginxPrefix + "rewrite-target": "/${1}/x/$2"}, nil)
	if got := a.rewriteTarget(); got != `/\1/x/\2` {
		t.Fatalf("rewrite target %q", got)
	}
	s := settings{rewrite: `/\2`}
	for _, tc := range []struct {
		path, req, want string
		exact           bool
	}{
		{"/app(/|$)(.*)", "/app/users/7", "/users/7", false},
		{"/app(/|$)(.*)", "/APP", "/", false},
		{"/checkout", "/checkout", "/", true},
	} {
		p := pathMatch{regex: true, exact: tc.exact, value: tc.path}
		re := regexp.MustCompile(p.rewritePattern(s.rewriteRefs()))
		if !re.MatchString(tc.req) {
			t.Errorf("%s: %s does not match %s", tc.path, re, tc.req)
			continue
		}
		// Envoy's regex_rewrite: every match replaced, \n the groups.
		got := re.ReplaceAllString(tc.req, strings.ReplaceAll(s.rewrite, `\`, "$"))
		if got != tc.want {
			t.Errorf("%s rewrites %s to %q, want %q", tc.path, tc.req, got, tc.want)
		}
	}
	for _, bad := range []string{"/$host/$1", "relative/$1", "/a?b=$1"} {
		a := reader(map[string]string{Prefix + "rewrite-target": bad}, nil)
		if got := a.rewriteTarget(); got != "" || len(a.is.st.Problems) != 1 || a.is.st.Problems[0].Reason != ReasonInvalidAnnotation {
			t.Errorf("%q: target %q, problems %+v; want it refused", bad, got, a.is.st.Problems)
		}
	}
}

// TestSourceRangesAndRedirect: addresses become host prefixes, ranges are
// canonical; ssl-redirect applies to the hosts of spec.tls, force to all.
func TestSourceRangesAndRedirect(t *testing.T) {
	var s settings
	reader(map[string]string{NginxPrefix + "whitelist-source-range": "10.1.2.3, 10.0.0.0/8,2001:db8::1/64"}, nil).sourceRanges(&s)
	if got := strings.Join(s.filters.AllowedSourceRanges, " "); got != "10.1.2.3/32 10.0.0.0/8 2001:db8::/64" {
		t.Errorf("ranges %s", got)
	}
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{Hosts: []string{"a.example.com"}}}}}
	s = settings{sslRedirect: true}
	if !s.redirectsToHTTPS(ing, "a.example.com") || s.redirectsToHTTPS(ing, "b.example.com") {
		t.Error("ssl-redirect: only the hosts of spec.tls redirect")
	}
	s = settings{forceSSLRedirect: true}
	if !s.redirectsToHTTPS(ing, "b.example.com") {
		t.Error("force-ssl-redirect redirects every host")
	}
}
