package xdstranslator

import (
	"strings"
	"testing"

	customresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/custom_response/v3"
	localresponsev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/custom_response/local_response_policy/v3"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// TestSignInRedirect: the Location of the 302 is the sign-in URL with the
// original URL in the redirect parameter ("?" or "&" as the URL has a
// query), or the URL as it is without a parameter; the match is a local
// reply of status 401 only.
func TestSignInRedirect(t *testing.T) {
	for _, tc := range []struct {
		in   ir.ExtAuthSignIn
		want string
	}{
		{ir.ExtAuthSignIn{URL: "https://login.example.com/start", Param: "rd"}, "https://login.example.com/start?rd=%REQ(:scheme)%://%REQ(:authority)%%REQ(:path)%"},
		{ir.ExtAuthSignIn{URL: "https://login.example.com/start?a=b", Param: "next"}, "https://login.example.com/start?a=b&next=%REQ(:scheme)%://%REQ(:authority)%%REQ(:path)%"},
		{ir.ExtAuthSignIn{URL: "https://%REQ(:authority)%/start?rd=%REQ(:path)%"}, "https://%REQ(:authority)%/start?rd=%REQ(:path)%"},
	} {
		cr := &customresponsev3.CustomResponse{}
		if err := signInRedirect(&tc.in).UnmarshalTo(cr); err != nil {
			t.Fatal(err)
		}
		fm := cr.GetCustomResponseMatcher().GetMatcherList().GetMatchers()[0]
		preds := fm.GetPredicate().GetAndMatcher().GetPredicate()
		var inputs []string
		for _, p := range preds {
			sp := p.GetSinglePredicate()
			inputs = append(inputs, sp.GetInput().GetTypedConfig().GetTypeUrl()[strings.LastIndex(sp.GetInput().GetTypedConfig().GetTypeUrl(), ".")+1:]+"="+sp.GetValueMatch().GetExact())
		}
		if got := strings.Join(inputs, " "); got != "HttpResponseStatusCodeMatchInput=401 HttpResponseLocalReplyMatchInput=true" {
			t.Errorf("match %s", got)
		}
		lp := &localresponsev3.LocalResponsePolicy{}
		if err := fm.GetOnMatch().GetAction().GetTypedConfig().UnmarshalTo(lp); err != nil {
			t.Fatal(err)
		}
		if lp.GetStatusCode().GetValue() != 302 || len(lp.ResponseHeadersToAdd) != 1 || lp.ResponseHeadersToAdd[0].Header.Key != "location" || lp.ResponseHeadersToAdd[0].Header.Value != tc.want {
			t.Errorf("%+v: policy %v, want 302 to %s", tc.in, lp, tc.want)
		}
	}
}

// TestRouteChecks: a route's SecurityPolicy check runs before its rule's
// own, an equal check once; the policy's filter is named to sort first.
func TestRouteChecks(t *testing.T) {
	b := &ir.Backend{Name: "service/default/authz/80", Weight: 1}
	pol := &ir.ExtAuth{Protocol: ir.ExtAuthHTTP, Backend: b, PathPrefix: "/p"}
	own := &ir.ExtAuth{Protocol: ir.ExtAuthHTTP, Backend: b, PathPrefix: "/r"}
	if got := routeChecks(&ir.HTTPFilters{ExtAuth: own, SecurityExtAuth: pol}); len(got) != 2 || got[0] != pol || got[1] != own {
		t.Errorf("checks %v, want the policy's then the rule's", got)
	}
	same := *pol
	if got := routeChecks(&ir.HTTPFilters{ExtAuth: &same, SecurityExtAuth: pol}); len(got) != 1 {
		t.Errorf("an equal check asked %d times", len(got))
	}
	pf, _ := extAuthz(pol, -1)
	rf, _ := extAuthz(own, -1)
	if p := policyCheck(pf); !strings.HasPrefix(p.name, filterExtAuthz+"/policy/") || p.filter.Name != p.name || p.name >= rf.name || pf.filter.Name == p.name {
		t.Errorf("policy filter %q (its HttpFilter %q), rule filter %q: want /policy/ sorting first, the original untouched", p.name, p.filter.Name, rf.name)
	}
}
