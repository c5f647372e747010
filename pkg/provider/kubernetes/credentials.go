package kubernetes

// Credential Secrets: the Opaque Secrets that SecurityPolicies (and
// ingress-nginx auth annotations) reference for htpasswd users, API keys,
// JWKS and OAuth2 client secrets. The manager's cache watches Secrets of
// type kubernetes.io/tls only (cacheOptions); this cache of its own
// watches those of type Opaque (a field selector the API server applies),
// as metadata, in the watched namespaces. The referenced ones are read in
// full through the same refCache as certificates, so a Secret of any
// other type (a ServiceAccount token, a Helm release, registry
// credentials) is never fetched, whoever references it.

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// credentialCacheOptions are the options of the credential Secret cache:
// Secrets of type Opaque only, stripped to their identity
// (stripToIdentity), in namespaces (every namespace when empty).
func credentialCacheOptions(namespaces []string) cache.Options {
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Transform: stripToIdentity,
			Field:     fields.OneTermEqualSelector(secretTypeField, string(corev1.SecretTypeOpaque)),
		}},
		DefaultNamespaces: namespaceConfigs(namespaces),
	}
}

// namespaceConfigs are a cache's DefaultNamespaces for namespaces: nil
// (every namespace) when there are none.
func namespaceConfigs(namespaces []string) map[string]cache.Config {
	if len(namespaces) == 0 {
		return nil
	}
	out := make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		out[ns] = cache.Config{}
	}
	return out
}
