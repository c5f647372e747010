package gatewayapi

// What an Ingress's authentication annotations (pkg/ingress auth.go)
// resolve with the SecurityPolicy's machinery: basic auth users from an
// htpasswd Secret (parseHtpasswd, ir.BasicAuth) and an auth-url as an
// HTTP external authorization check (externalURLBackend, ir.ExtAuth).

import (
	"fmt"
	"strings"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// BasicAuthUsers reads the users of Secret ns/name for an Ingress's basic
// auth (ingress-nginx auth-secret): with authMap false (auth-secret-type
// auth-file) its key "auth" (or ".htpasswd") is an htpasswd file; with
// authMap true (auth-map) each data entry is a user and its hash. Every
// hash must be {SHA} (htpasswd -s), the one format Envoy's basic_auth
// checks (parseHtpasswd's rules). The Secret must be of type Opaque (as a
// SecurityPolicy's: policySecret). It returns the users sorted by name,
// or why the Secret cannot be used (not found, another type, no such key,
// a line or hash refused).
func (r *Refs) BasicAuthUsers(ns, name string, authMap bool) ([]ir.BasicAuthUser, string) {
	s := r.t.secrets[nn(ns, name)]
	if s == nil {
		return nil, fmt.Sprintf("Secret %s/%s not found", ns, name)
	}
	if msg := notOpaque(s); msg != "" {
		// As policySecret: the Kubernetes provider reads no other type.
		return nil, fmt.Sprintf("Secret %s/%s: %s", ns, name, msg)
	}
	var file, key string
	switch {
	case authMap:
		var b strings.Builder
		for _, user := range sortedKeys(s.Data) {
			if strings.ContainsAny(user, ":\n") || strings.ContainsAny(string(s.Data[user]), "\r\n") {
				return nil, fmt.Sprintf("Secret %s/%s (auth-map): entry %s is not a user name and one hash", ns, name, q(user))
			}
			fmt.Fprintf(&b, "%s:%s\n", user, s.Data[user])
		}
		file, key = b.String(), "(auth-map)"
	default:
		d, k, ok := htpasswdFile(s)
		if !ok {
			return nil, fmt.Sprintf("Secret %s/%s has no key %s", ns, name, strings.Join(htpasswdKeys, " or "))
		}
		file, key = string(d), k
	}
	users, msg := parseHtpasswd(file)
	if msg != "" {
		return nil, fmt.Sprintf("Secret %s/%s key %s: %s", ns, name, key, msg)
	}
	return users, ""
}

// ExternalAuthURL resolves rawURL, an Ingress's auth-url in namespace ns,
// to an HTTP external authorization check asking exactly the URL's path
// and query (PathOverride) of the URL's host and port
// (externalURLBackend: a host name resolved by DNS as an absolute name,
// or an IP address; https verified against the system's CAs). It returns
// why the URL cannot be used.
func (r *Refs) ExternalAuthURL(ns, rawURL string) (*ir.ExtAuth, string) {
	b, u, p := r.t.externalURLBackend(ns, rawURL, nil)
	if p != nil {
		return nil, p.msg
	}
	path := u.EscapedPath()
	if path == "" {
		path = "/"
	}
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	if !extAuthPathRE.MatchString(strings.ReplaceAll(path, "?", "/")) || len(path) > maxExtAuthPath {
		return nil, fmt.Sprintf("URL %s: the path and query are not at most %d characters of a URL path's alphabet", q(rawURL), maxExtAuthPath)
	}
	return &ir.ExtAuth{Protocol: ir.ExtAuthHTTP, Backend: b, PathOverride: path, AllRequestHeaders: true}, ""
}
