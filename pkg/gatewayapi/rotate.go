package gatewayapi

// A Secret's change without a full translation: a certificate rotation
// costs the listeners that serve the certificate, not every route.

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// secretKind names Secrets among the Cache's changed objects (depKey).
const secretKind = "Secret"

// secretChange is a Secret of the snapshot that is new (old nil), gone
// (new nil) or another object.
type secretChange struct {
	k        types.NamespacedName
	old, new *corev1.Secret
}

// rotate applies the Secrets' changes to the translator's index and the
// listeners that read them, and reports false when the Cache must start
// over instead: a changed Secret was read by other Gateway-level state
// (translator secretReads: a Gateway's or an XBackend's client
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
		if t.secretReads[ch.k] {
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
