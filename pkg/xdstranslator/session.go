package xdstranslator

// Session persistence (GEP-1619) as Envoy's stateful session filter
// renders it: the per-route configuration of filterStatefulSession
// (httpfilters.go) for the routes whose IR has SessionPersistence.

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statefulsessionv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/stateful_session/v3"
	cookiev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/cookie/v3"
	headerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/stateful_session/header/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/type/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// Envoy's session state extensions (their TypedExtensionConfig names).
const (
	sessionStateCookie = "envoy.http.stateful_session.cookie"
	sessionStateHeader = "envoy.http.stateful_session.header"
)

// statefulSession is a route's StatefulSessionPerRoute for sp:
//   - Cookie: CookieBasedSessionState with the cookie's name and path, its
//     ttl the Max-Age of a permanent cookie (none, 0s, for a session
//     cookie: Envoy then sets neither Max-Age nor Expires), SameSite
//     Strict, and Secure for the routes of HTTPS listeners (GEP-1619
//     "Secure, HttpOnly, SameSite": Envoy adds HttpOnly itself; a plain
//     HTTP listener's cookie is not Secure, as its clients would never
//     send it back). Envoy reads and
//     sets the cookie only for requests whose path is under the cookie's
//     path.
//   - Header: HeaderBasedSessionState with the header's name; Envoy adds
//     the header to the answer when the request's does not name the
//     endpoint that served it.
//
// strict is false: a request whose cookie or header names no endpoint of
// the chosen backend (gone, or another backend's) is load balanced as
// any, and its answer names the new endpoint (GEP-1619 "SHOULD fall back
// to available backends"). The cookie or header never chooses among the
// rule's backends, only among the chosen backend's endpoints (Envoy
// looks the address up in that cluster's hosts), so the weights hold.
func statefulSession(sp *ir.SessionPersistence) *statefulsessionv3.StatefulSessionPerRoute {
	var state *statefulsessionv3.StatefulSession
	switch sp.Type {
	case ir.SessionHeader:
		state = &statefulsessionv3.StatefulSession{
			SessionState: &corev3.TypedExtensionConfig{Name: sessionStateHeader, TypedConfig: toAny(&headerv3.HeaderBasedSessionState{Name: sp.Name})},
		}
	default:
		c := &httpv3.Cookie{
			Name:       sp.Name,
			Path:       sp.CookiePath,
			Ttl:        durationpb.New(0),
			Attributes: []*httpv3.CookieAttribute{{Name: "SameSite", Value: "Strict"}},
		}
		if sp.Secure {
			c.Attributes = append(c.Attributes, &httpv3.CookieAttribute{Name: "Secure"})
		}
		if sp.CookieMaxAge != nil {
			c.Ttl = durationpb.New(sp.CookieMaxAge.Duration)
		}
		state = &statefulsessionv3.StatefulSession{
			SessionState: &corev3.TypedExtensionConfig{Name: sessionStateCookie, TypedConfig: toAny(&cookiev3.CookieBasedSessionState{Cookie: c})},
		}
	}
	return &statefulsessionv3.StatefulSessionPerRoute{
		Override: &statefulsessionv3.StatefulSessionPerRoute_StatefulSession{StatefulSession: state},
	}
}
