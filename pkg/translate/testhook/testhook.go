// Package testhook forces an Envoy-invalid value past pre-validation, so
// that end-to-end tests can watch what a NACK does. It is inert unless the
// environment variable named by EnvRejectPrefix is set; nothing sets it
// outside tests.
package testhook

import (
	"os"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/proto"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// EnvRejectPrefix names the environment variable that turns the hook on:
// its value is a path prefix (e.g. "/nack-me"). Every Envoy route that
// matches exactly that prefix (prefix or path_separated_prefix) gets the
// path regular expression "(" instead, which RE2 cannot compile: Envoy
// rejects the route configuration ("Invalid regex"), while protoc-gen-validate
// (non-empty) and go-control-plane's consistency check accept it.
const EnvRejectPrefix = "XDS_CONTROLLER_TESTHOOK_REJECT_PREFIX"

// Apply returns x with the hook applied when EnvRejectPrefix is set, else
// x itself. x is not modified: changed scopes and route configurations are
// copies.
func Apply(x map[string]*xdstranslator.Resources) map[string]*xdstranslator.Resources {
	prefix := os.Getenv(EnvRejectPrefix)
	if prefix == "" {
		return x
	}
	out := make(map[string]*xdstranslator.Resources, len(x))
	for scope, r := range x {
		out[scope] = r
		if r == nil {
			continue
		}
		c := *r
		r = &c
		out[scope] = r
		routes := make([]types.Resource, len(r.Routes))
		for i, res := range r.Routes {
			routes[i] = res
			rc, ok := res.(*routev3.RouteConfiguration)
			if !ok || !matches(rc, prefix) {
				continue
			}
			rc = proto.Clone(rc).(*routev3.RouteConfiguration)
			for _, vh := range rc.VirtualHosts {
				for _, rt := range vh.Routes {
					if prefixOf(rt) == prefix {
						rt.Match.PathSpecifier = &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "("}}
					}
				}
			}
			routes[i] = rc
		}
		r.Routes = routes
	}
	return out
}

func matches(rc *routev3.RouteConfiguration, prefix string) bool {
	for _, vh := range rc.VirtualHosts {
		for _, rt := range vh.Routes {
			if prefixOf(rt) == prefix {
				return true
			}
		}
	}
	return false
}

func prefixOf(rt *routev3.Route) string {
	switch p := rt.GetMatch().GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		return p.Prefix
	case *routev3.RouteMatch_PathSeparatedPrefix:
		return p.PathSeparatedPrefix
	}
	return ""
}
