package ingress

// ssl-passthrough (ingress-nginx's): the TLS connections of an Ingress's
// hosts go, undecrypted, to the backend of the host's path "/" (else of
// its first path), chosen by the SNI the client sends. The class's HTTPS
// port serves them beside the class's own TLS: per host, an IR listener
// of protocol TLS, mode Passthrough, with that hostname, on the same
// port, whose L4 route the xDS translator renders as a filter chain
// matching the name, next to the HTTPS listener's chain (the mechanism of
// a Gateway's TLS passthrough listeners beside its HTTPS one; the HTTPS
// listener answers 421 to a request for a passed-through host that
// reaches it on a reused connection). Plain HTTP to the hosts is still
// served by the paths on the class's HTTP port.

import (
	"fmt"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// passthroughSection names the class Gateway's passthrough listener of a
// host after its HTTPS listener's name ("https-passthrough-<host>").
const passthroughSection = "-passthrough-"

// passthroughRoute adds the L4 route of is, an Ingress with
// ssl-passthrough, to cs: its rules' hosts (a rule without host is
// reported: SNI needs a name; a host another, older, Ingress passes
// through is reported) to the backend of each host's path "/", else its
// first path.
func (t *translator) passthroughRoute(cs *classState, is *ingressState, key string) {
	if cs.passthroughHosts == nil {
		cs.passthroughHosts = map[string]*ingressState{}
	}
	for i, rule := range is.obj.Spec.Rules {
		where := fmt.Sprintf("spec.rules[%d]", i)
		host, err := readHost(rule.Host)
		switch {
		case err != nil || rule.HTTP == nil || len(rule.HTTP.Paths) == 0:
			continue // reported with the paths
		case host.vhost == "*":
			is.problemf(ReasonInvalidAnnotation, "annotation %s: %s has no host; TLS passthrough picks by the SNI name", key, where)
			continue
		case cs.passthroughHosts[host.vhost] != nil && cs.passthroughHosts[host.vhost] != is:
			is.problemf(ReasonConflict, "%s: host %s is passed through to the backend of Ingress %s, which is older; this one is not", where, host.vhost, cs.passthroughHosts[host.vhost])
			continue
		case cs.passthroughHosts[host.vhost] == is:
			continue
		}
		j := slices.IndexFunc(rule.HTTP.Paths, func(p networkingv1.HTTPIngressPath) bool { return p.Path == "/" })
		j = max(j, 0)
		r := t.backend(is, rule.HTTP.Paths[j].Backend, fmt.Sprintf("%s.http.paths[%d].backend", where, j))
		if r.Backends == nil {
			continue // reported; its TLS connections are refused
		}
		cs.passthroughHosts[host.vhost] = is
		cs.passthrough = append(cs.passthrough, &ir.L4Route{
			Name:      fmt.Sprintf("%s%s/%s/rule/%d/passthrough", routePrefix, is.obj.Namespace, is.obj.Name, i),
			Hostnames: []string{host.vhost},
			Backends:  *r.Backends,
		})
	}
}

// addPassthrough adds to g, the class Gateway gw's IR, a listener per
// host passed through, on the port of gw's HTTPS listener, in the order
// of the Ingresses; the Ingress that holds the host lists it in its
// status.
func (t *translator) addPassthrough(cs *classState, g *ir.Gateway, gw *gwapiv1.Gateway) {
	l := gw.Spec.Listeners[1]
	for _, r := range cs.passthrough {
		host := r.Hostnames[0]
		owner := cs.passthroughHosts[host]
		il, err := t.listener(gw, l, t.cfg.HTTPSAddress, DefaultHTTPSAddress)
		if err != nil {
			owner.problemf(ReasonNotServed, "not served on %s%s%s: %v", strings.ToUpper(string(l.Name)), strings.ToUpper(passthroughSection), host, err)
			for _, prev := range g.Listeners {
				t.out.later[prev]++
			}
			continue
		}
		il.Name += passthroughSection + host
		il.Hostname = host
		il.Protocol = ir.ProtocolTLS
		il.TLS = &ir.ListenerTLS{Mode: ir.TLSPassthrough}
		il.L4Routes = []*ir.L4Route{r}
		g.Listeners = append(g.Listeners, il)
		owner.st.Listeners = append(owner.st.Listeners, listenerLine(il))
	}
}
