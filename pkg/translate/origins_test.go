package translate

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
)

// nameOf is the route name that docs/controller.md gives the route of
// origin o: "<kind>/<ns>/<name>/rule/<i>/match/<j>" (kind lower-cased),
// "ingress/<ns>/<name>/rule/<i>/path/<j>" or ".../defaultBackend".
func nameOf(o ir.Origin) string {
	k := o.Object
	if k.Kind != gatewayapi.KindIngress {
		return fmt.Sprintf("%s/%s/%s/rule/%d/match/%d", strings.ToLower(k.Kind), k.Namespace, k.Name, o.Rule, o.Match)
	}
	if o.Rule == -1 {
		return fmt.Sprintf("ingress/%s/%s/defaultBackend", k.Namespace, k.Name)
	}
	if o.Match == -1 {
		return fmt.Sprintf("ingress/%s/%s/rule/%d/app-root", k.Namespace, k.Name, o.Rule)
	}
	return fmt.Sprintf("ingress/%s/%s/rule/%d/path/%d", k.Namespace, k.Name, o.Rule, o.Match)
}

// TestOrigins: on every golden input, each IR route carries the origin
// its name says, and the xDS of each scope knows the origin of each of
// its Envoy routes (xdstranslator.Origins) but the 421 answers of
// misdirected hosts, which have none.
func TestOrigins(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.in.yaml")
	seen := map[string]bool{}
	for _, in := range inputs {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(res, gatewayapi.Options{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		for _, g := range out.Result.IR.Gateways {
			for _, l := range g.Listeners {
				for _, r := range l.HTTPRoutes {
					if want := nameOf(r.Origin); r.Name != want {
						t.Errorf("%s: IR route %s has origin %+v (%s)", in, r.Name, r.Origin, want)
					}
				}
			}
		}
		for scope, x := range out.XDS {
			for _, rc := range x.Routes {
				for _, vh := range rc.(*routev3.RouteConfiguration).VirtualHosts {
					for _, rt := range vh.Routes {
						o, ok := x.Origins.Of(rt.Name)
						switch {
						case strings.HasPrefix(rt.Name, "misdirected/"):
							if ok {
								t.Errorf("%s: scope %s: route %s has origin %+v", in, scope, rt.Name, o)
							}
						case !ok || nameOf(o) != rt.Name:
							t.Errorf("%s: scope %s: route %s has origin %+v (%v)", in, scope, rt.Name, o, ok)
						default:
							what := o.Object.Kind
							if o.Rule == -1 {
								what += " defaultBackend"
							}
							seen[what] = true
						}
					}
				}
			}
		}
	}
	for _, want := range []string{"HTTPRoute", "GRPCRoute", "Ingress", "Ingress defaultBackend"} {
		if !seen[want] {
			t.Errorf("no Envoy route of %s in the golden inputs: the test proves less than it says", want)
		}
	}
}
