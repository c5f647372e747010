package ingress

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/re2"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

func class(name, controller string, created time.Time, def bool) *networkingv1.IngressClass {
	ic := &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       networkingv1.IngressClassSpec{Controller: controller},
	}
	if def {
		ic.Annotations = map[string]string{AnnotationDefaultClass: "true"}
	}
	return ic
}

// TestClassOf: an Ingress is ours through spec.ingressClassName, else the
// deprecated annotation, else our default class (the oldest of several);
// a class of another controller, or none, is not ours.
func TestClassOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := &resources.Resources{IngressClasses: []*networkingv1.IngressClass{
		class("mine", ControllerName, t0, false),
		class("newer-default", ControllerName, t0.Add(time.Hour), true),
		class("older-default", ControllerName, t0, true),
		class("nginx", "k8s.io/ingress-nginx", t0.Add(-time.Hour), true),
	}}
	classes := Classes(res, Config{})
	if _, ok := classes["nginx"]; ok || len(classes) != 3 {
		t.Fatalf("classes %v, want the three of our controller", slices.Sorted(func(y func(string) bool) {
			for k := range classes {
				y(k)
			}
		}))
	}
	ing := func(className *string, annotation string) *networkingv1.Ingress {
		i := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: className}}
		if annotation != "" {
			i.Annotations = map[string]string{AnnotationIngressClass: annotation}
		}
		return i
	}
	for _, tc := range []struct {
		name string
		ing  *networkingv1.Ingress
		want string
	}{
		{"ingressClassName", ing(ptr.To("mine"), "older-default"), "mine"},
		{"another controller's class", ing(ptr.To("nginx"), ""), ""},
		{"a class that does not exist", ing(ptr.To("gone"), ""), ""},
		{"deprecated annotation", ing(nil, "mine"), "mine"},
		{"annotation naming another's class", ing(nil, "nginx"), ""},
		{"no class: our oldest default", ing(nil, ""), "older-default"},
	} {
		got := ""
		if c := ClassOf(tc.ing, classes); c != nil {
			got = c.Obj.Name
		}
		if got != tc.want {
			t.Errorf("%s: class %q, want %q", tc.name, got, tc.want)
		}
	}
	delete(classes, "older-default")
	delete(classes, "newer-default")
	if c := ClassOf(ing(nil, ""), classes); c != nil {
		t.Errorf("without a default class of ours an Ingress without class got %s", c.Obj.Name)
	}
}

// TestClassGateway: the Gateway standing for a class is in the controller's
// namespace, or beside the IngressClassParameters that name GatewayParameters
// (its local parametersRef); it listens on the configured ports and names
// its class.
func TestClassGateway(t *testing.T) {
	ic := class("web", ControllerName, time.Time{}, false)
	ic.UID = "uid-1"
	gw := ClassGateway(ic, nil, Config{Namespace: "ctl", GatewayClass: "gc", HTTPAddress: "127.0.0.1:10080"})
	if gw.Namespace != "ctl" || gw.Name != "ingress-web" || gw.Spec.GatewayClassName != "gc" || gw.UID != "uid-1" ||
		gw.Annotations[gatewayapi.AnnotationStandsForIngressClass] != "web" || gw.Spec.Infrastructure != nil {
		t.Errorf("class Gateway %+v", gw)
	}
	if l := gw.Spec.Listeners; len(l) != 2 || l[0].Port != 10080 || l[0].Protocol != gwapiv1.HTTPProtocolType || l[1].Port != 443 || l[1].Protocol != gwapiv1.HTTPSProtocolType {
		t.Errorf("listeners %+v, want http 10080 and https 443", l)
	}
	params := &v1alpha1.IngressClassParameters{ObjectMeta: metav1.ObjectMeta{Namespace: "edge", Name: "p"},
		Spec: v1alpha1.IngressClassParametersSpec{GatewayParametersRef: &v1alpha1.LocalObjectReference{Name: "big"}}}
	gw = ClassGateway(ic, params, Config{Namespace: "ctl"})
	if gw.Namespace != "edge" || gw.Spec.GatewayClassName != DefaultGatewayClass || gw.Spec.Infrastructure == nil ||
		gw.Spec.Infrastructure.ParametersRef.Name != "big" || gw.Spec.Infrastructure.ParametersRef.Kind != v1alpha1.Kind {
		t.Errorf("class Gateway with GatewayParameters %+v", gw)
	}
}

// TestReadPath: the Ingress API's path types; ImplementationSpecific is a
// prefix; a prefix's trailing slash does not count; invalid paths say why.
func TestReadPath(t *testing.T) {
	typ := func(p networkingv1.PathType) *networkingv1.PathType { return &p }
	for _, tc := range []struct {
		typ  *networkingv1.PathType
		path string
		want string // pathMatch.String(), or "error: <part of the message>"
	}{
		{typ(networkingv1.PathTypeExact), "/foo/", "Exact /foo/"},
		{typ(networkingv1.PathTypePrefix), "/foo/", "Prefix /foo"},
		{typ(networkingv1.PathTypePrefix), "", "Prefix /"},
		{typ(networkingv1.PathTypePrefix), "///", "error: //"},
		{typ(networkingv1.PathTypeImplementationSpecific), "/foo", "Prefix /foo"},
		{typ("Regex"), "/foo", "error: is not Exact"},
		{nil, "/foo", "error: pathType is required"},
		{typ(networkingv1.PathTypeExact), "foo", "error: must start with /"},
		{typ(networkingv1.PathTypePrefix), "/a?b", "error: '?'"},
		{typ(networkingv1.PathTypePrefix), "/a b", "error: spaces"},
		{typ(networkingv1.PathTypePrefix), "/a/%2F", "error: %2f"},
		{typ(networkingv1.PathTypePrefix), "/a/..", "error: /.."},
	} {
		m, err := readPath(networkingv1.HTTPIngressPath{Path: tc.path, PathType: tc.typ}, false)
		got := m.String()
		if err != nil {
			got = "error: " + err.Error()
		}
		if want, isErr := strings.CutPrefix(tc.want, "error: "); isErr && !strings.Contains(got, want) || !isErr && got != tc.want {
			t.Errorf("%v %q: %s, want %s", tc.typ, tc.path, got, tc.want)
		}
	}
}

// TestComparePaths: the longest path first, Exact before Prefix at equal
// length, "/" last.
func TestComparePaths(t *testing.T) {
	ps := []pathMatch{
		{value: "/"}, {value: "/a"}, {exact: true, value: "/a"}, {value: "/abc"},
		{exact: true, value: "/"}, {exact: true, value: "/ab/"}, {value: "/b"},
	}
	slices.SortFunc(ps, comparePaths)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := "Exact /ab/|Prefix /abc|Exact /a|Prefix /a|Prefix /b|Exact /|Prefix /"
	if strings.Join(got, "|") != want {
		t.Errorf("order %s, want %s", strings.Join(got, "|"), want)
	}
}

// TestWildcardHost: "*.foo.com" matches exactly one label in place of "*"
// (the authority check its routes carry, with Envoy's whole-string regex
// semantics), with or without a port; its expression stays within Envoy's
// size limit up to the most labels allowed.
func TestWildcardHost(t *testing.T) {
	h, err := readHost("*.foo.com")
	if err != nil || !h.wildcard || h.vhost != "*.foo.com" {
		t.Fatalf("readHost: %+v %v", h, err)
	}
	m := h.authorityMatch()
	if len(m) != 1 || m[0].Name != ":authority" || m[0].Type != ir.MatchRegex {
		t.Fatalf("authority match %+v", m)
	}
	re := regexp.MustCompile("^(?:" + m[0].Value + ")$")
	for host, want := range map[string]bool{
		"bar.foo.com": true, "bar.foo.com:8080": true, "BAR.foo.com": true,
		"baz.bar.foo.com": false, "foo.com": false, ".foo.com": false,
	} {
		if re.MatchString(host) != want {
			t.Errorf("%s: match %v, want %v", host, !want, want)
		}
	}
	if exact, _ := readHost("foo.com"); exact.authorityMatch() != nil {
		t.Error("an exact host got an authority check")
	}
	if all, _ := readHost(""); all.vhost != "*" {
		t.Errorf("no host: vhost %q, want *", all.vhost)
	}
	// An IP address or a label over 63 characters: IngressRule host says
	// "IPs are not allowed", and labels are RFC 1123 labels.
	for _, bad := range []string{"Foo.com", "foo_bar.com", "a.*.com", "10.0.0.1:80", "10.0.0.1", strings.Repeat("a", 64) + ".com"} {
		if _, err := readHost(bad); err == nil {
			t.Errorf("host %q accepted", bad)
		}
	}
	long := "*" + strings.Repeat(".a", maxWildcardLabels)
	h, err = readHost(long)
	if err != nil {
		t.Fatal(err)
	}
	n, err := re2.ProgramSize(h.authorityMatch()[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	if n > re2.MaxProgramSize {
		t.Errorf("the authority check of %d labels compiles to %d instructions, over Envoy's limit", maxWildcardLabels, n)
	}
	if _, err := readHost(long + ".a"); err == nil {
		t.Error("a wildcard host with too many labels was accepted")
	}
}
