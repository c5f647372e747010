package gatewayapi

// A Secret's, a Namespace's or a ReferenceGrant's change without a full
// translation: a certificate rotation costs the listeners that serve the
// certificate, a Namespace's labels or a ReferenceGrant the routes that
// read them, not every route.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
	"github.com/xds-controller/xds-controller/pkg/resources"
)

// The kinds of depKey (beside resources.ServiceKind's and
// XBackendKind's) whose changes update follows without starting over:
// Secrets, Namespaces (by name), and the ReferenceGrants of a namespace
// (by namespace, name "": grantAllows reads them all).
const (
	secretKind         = "Secret"
	namespaceKind      = "Namespace"
	referenceGrantKind = "ReferenceGrant"
)

// secretChange is a Secret of the snapshot that is new (old nil), gone
// (new nil) or another object.
type secretChange struct {
	k        types.NamespacedName
	old, new *corev1.Secret
}

// rotate applies the Secrets' changes to the translator's index and the
// listeners that read them, and reports false when the Cache must start
// over instead: a changed Secret was read by other Gateway-level state
// (translator levelReads: a Gateway's or an XBackend's client
// certificate, a SecurityPolicy's credentials), or a listener that read
// one had unusable certificates before (its status says so) or has now.
// A listener whose certificates stay usable gets them loaded again, in a
// new ir.ListenerTLS (the last Result's stays as it was): only the
// certificates' bytes differ, so the IR listener (built at every run)
// and the Envoy secret of the certificate are all that change; the
// listener's status does not. A Secret that nothing of ours read (or only
// an Ingress: pkg/ingress follows those) changes nothing here.
func (c *Cache) rotate(changes []secretChange) bool {
	if len(changes) == 0 {
		return true
	}
	t := c.t
	var listeners []*listenerState
	for _, ch := range changes {
		if t.levelReads[depKey{secretKind, ch.k}] {
			return false
		}
		for _, l := range t.certReads[ch.k] {
			if !slices.Contains(listeners, l) {
				listeners = append(listeners, l)
			}
		}
	}
	for _, ch := range changes {
		if ch.new == nil {
			delete(t.secrets, ch.k)
		} else {
			t.secrets[ch.k] = ch.new
		}
	}
	for _, l := range listeners {
		if l.certProblem != nil || l.tls == nil || l.tls.Mode != ir.TLSTerminate {
			return false
		}
		certs, p := t.listenerCertificates(l)
		if p != nil {
			return false
		}
		tls := *l.tls
		tls.Certificates = certs
		l.tls = &tls
	}
	return true
}

// reindex applies the changes of Namespaces and ReferenceGrants (level:
// a Namespace by name, the ReferenceGrants of a namespace) to the
// translator's indexes, as newTranslator builds them from res, and
// reports false when the Cache must start over instead: Gateway-level
// state read one of them (translator levelReads: a ListenerSet's
// admission by namespace labels, a grant for a listener's certificate, a
// Gateway's CA or a policy's Secret). The routes that read them are the
// caller's to translate again.
func (c *Cache) reindex(res *resources.Resources, level []depKey) bool {
	t := c.t
	for _, k := range level {
		if t.levelReads[k] || c.gatewayReads[k] {
			return false
		}
	}
	for _, k := range level {
		switch k.Kind {
		case namespaceKind:
			delete(t.namespaces, k.Name)
			for _, n := range res.Namespaces {
				if n != nil && n.Name == k.Name {
					t.namespaces[n.Name] = n // the last, as newTranslator
				}
			}
		case referenceGrantKind:
			var gs []*gwapiv1.ReferenceGrant
			for _, g := range res.ReferenceGrants {
				if g != nil && g.Namespace == k.Namespace {
					gs = append(gs, g)
				}
			}
			if len(gs) == 0 {
				delete(t.grants, k.Namespace)
			} else {
				t.grants[k.Namespace] = gs
			}
		}
	}
	return true
}
