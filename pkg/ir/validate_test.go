package ir

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// valid returns a small IR that passes Validate: one Gateway, one HTTP
// listener, one route to one backend.
func valid() *IR {
	return &IR{Gateways: []*Gateway{{
		Namespace: "default", Name: "gw", Class: "c", Scope: "gatewayclass/c",
		Listeners: []*Listener{{
			Name: "default/gw/http", Protocol: ProtocolHTTP, Address: "0.0.0.0", Port: 8080, GatewayPort: 80,
			HTTPRoutes: []*HTTPRoute{{
				Name: "httproute/default/r/rule/0/match/0", Hostname: "*",
				Match:    HTTPMatch{Path: &StringMatch{Type: MatchPathPrefix, Value: "/"}},
				Backends: &BackendGroup{Backends: []*Backend{{Name: "service/default/s/80", Weight: 1, Endpoints: []Endpoint{{Address: "10.0.0.1", Port: 8080}}}}},
				Timeouts: &Timeouts{Request: NewDuration(1500 * time.Millisecond)},
			}},
		}},
	}}}
}

func TestValidateAcceptsValid(t *testing.T) {
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid IR rejected: %v", err)
	}
}

func TestValidateRejects(t *testing.T) {
	for _, c := range []struct {
		name   string
		break_ func(x *IR)
		want   string
	}{
		{"missing scope", func(x *IR) { x.Gateways[0].Scope = "" }, "scope is required"},
		{"unsorted gateways", func(x *IR) {
			g := *x.Gateways[0]
			g.Name = "a"
			g.Listeners = nil
			x.Gateways = append(x.Gateways, &g)
		}, "sorted"},
		{"port zero", func(x *IR) { x.Gateways[0].Listeners[0].Port = 0 }, "outside 1-65535"},
		{"backend policy hash key without a name", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Policy = &BackendPolicy{Hash: &HashKey{Type: HashHeader}}
		}, "hash key Header needs a name"},
		{"backend policy probe without an interval", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Policy = &BackendPolicy{HealthCheck: &HealthCheck{Type: HealthCheckTCP, UnhealthyThreshold: 1, HealthyThreshold: 1}}
		}, "interval, timeout and thresholds must be above 0"},
		{"backend policy PROXY protocol v3", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Policy = &BackendPolicy{ProxyProtocol: 3}
		}, "PROXY protocol version 3"},
		{"bad address", func(x *IR) { x.Gateways[0].Listeners[0].Address = "example.com" }, "not an IP address"},
		{"HTTPS without certificates", func(x *IR) { x.Gateways[0].Listeners[0].Protocol = ProtocolHTTPS }, "at least one certificate"},
		{"two actions", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].DirectResponse = &DirectResponse{StatusCode: 500}
		}, "exactly one of"},
		{"no action", func(x *IR) { x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends = nil }, "exactly one of"},
		{"relative path", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Match.Path.Value = "api"
		}, "must start with /"},
		{"bad regex", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Match.Path = &StringMatch{Type: MatchRegex, Value: "(unclosed"}
		}, "regular expression"},
		{"prefix header match", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Match.Headers = []StringMatch{{Name: "x", Type: MatchPathPrefix, Value: "a"}}
		}, "cannot be PathPrefix"},
		{"redirect code", func(x *IR) {
			r := x.Gateways[0].Listeners[0].HTTPRoutes[0]
			r.Backends, r.Filters.Redirect = nil, &Redirect{StatusCode: 200}
		}, "redirect status 200"},
		{"backend with two definitions", func(x *IR) {
			l := x.Gateways[0].Listeners[0]
			r2 := *l.HTTPRoutes[0]
			r2.Name = "other"
			r2.Backends = &BackendGroup{Backends: []*Backend{{Name: "service/default/s/80", Weight: 1, Protocol: AppProtocolHTTP2}}}
			l.HTTPRoutes = append(l.HTTPRoutes, &r2)
		}, "two different definitions"},
		{"request Host edit", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Filters.RequestHeaders = &HeaderModifier{Set: []Header{{Name: "Host", Value: "a"}}}
		}, `request header modifier edits "Host"`},
		{"response pseudo-header edit", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Filters.ResponseHeaders = &HeaderModifier{Remove: []string{":status"}}
		}, `response header modifier edits ":status"`},
		{"backend pseudo-header edit", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].RequestHeaders = &HeaderModifier{Add: []Header{{Name: ":path", Value: "/"}}}
		}, `backend service/default/s/80: request header modifier edits ":path"`},
		{"two Host rewrites", func(x *IR) {
			r := x.Gateways[0].Listeners[0].HTTPRoutes[0]
			r.Filters.URLRewrite = &URLRewrite{Hostname: "a.internal"}
			r.Backends.Backends[0].HostRewrite = "b.internal"
		}, "rewrites Host already"},
		{"client certificate without a key", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].TLS = &BackendTLS{SNI: "s.example",
				ClientCertificate: &Certificate{Name: "default/client", CertificateChain: []byte("chain")}}
		}, "client certificate: a certificate needs a name, a chain and a key"},
		{"one backend name, two client certificates", func(x *IR) {
			l := x.Gateways[0].Listeners[0]
			l.HTTPRoutes[0].Backends.Backends[0].TLS = &BackendTLS{SNI: "s.example",
				ClientCertificate: &Certificate{Name: "default/a", CertificateChain: []byte("chain"), PrivateKey: []byte("key")}}
			r2 := *l.HTTPRoutes[0]
			r2.Name = "other"
			b := l.HTTPRoutes[0].Backends.Backends[0].DeepCopy()
			b.TLS.ClientCertificate.Name = "default/b"
			r2.Backends = &BackendGroup{Backends: []*Backend{b}}
			l.HTTPRoutes = append(l.HTTPRoutes, &r2)
		}, "two different definitions"},
		{"session cookie name", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].SessionPersistence = &SessionPersistence{Type: SessionCookie, Name: "a=b", CookiePath: "/"}
		}, "not an RFC 7230 token"},
		{"session cookie path", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].SessionPersistence = &SessionPersistence{Type: SessionCookie, Name: "s", CookiePath: "/a;Domain=x"}
		}, "session cookie path"},
		{"session cookie Max-Age", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].SessionPersistence = &SessionPersistence{Type: SessionCookie, Name: "s", CookiePath: "/", CookieMaxAge: NewDuration(1500 * time.Millisecond)}
		}, "whole number of seconds"},
		{"session header with a path", func(x *IR) {
			x.Gateways[0].Listeners[0].HTTPRoutes[0].SessionPersistence = &SessionPersistence{Type: SessionHeader, Name: "x-s", CookiePath: "/"}
		}, "no cookie path"},
		{"session without backends", func(x *IR) {
			r := x.Gateways[0].Listeners[0].HTTPRoutes[0]
			r.Backends, r.DirectResponse = nil, &DirectResponse{StatusCode: 500}
			r.SessionPersistence = &SessionPersistence{Type: SessionHeader, Name: "x-s"}
		}, "session persistence needs backends"},
		{"TCP and HTTP on one port", func(x *IR) {
			g := x.Gateways[0]
			g.Listeners = append(g.Listeners, &Listener{Name: "default/gw/tcp", Protocol: ProtocolTCP, Address: "0.0.0.0", Port: 8080})
		}, "cannot share a port"},
		{"duplicate listener", func(x *IR) {
			g := x.Gateways[0]
			l := *g.Listeners[0]
			l.Port = 9090
			g.Listeners = append(g.Listeners, &l)
		}, "not unique"},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := valid()
			c.break_(x)
			err := x.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestBackendHostRewriteBelongsToTheUse: one backend used with and without
// a Host rewrite is one cluster.
func TestBackendHostRewriteBelongsToTheUse(t *testing.T) {
	x := valid()
	l := x.Gateways[0].Listeners[0]
	r2 := *l.HTTPRoutes[0]
	r2.Name = "other"
	b := *r2.Backends.Backends[0]
	b.HostRewrite = "b.internal"
	r2.Backends = &BackendGroup{Backends: []*Backend{&b}}
	l.HTTPRoutes = append(l.HTTPRoutes, &r2)
	if err := x.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTLSListenersShareAPortBySNI(t *testing.T) {
	x := valid()
	cert := &Certificate{Name: "default/cert", CertificateChain: []byte("c"), PrivateKey: []byte("k")}
	l := x.Gateways[0].Listeners[0]
	l.Protocol, l.Hostname, l.TLS = ProtocolHTTPS, "a.example.com", &ListenerTLS{Mode: TLSTerminate, Certificates: []*Certificate{cert}}
	l2 := &Listener{Name: "default/gw/tls", Protocol: ProtocolTLS, Address: "0.0.0.0", Port: 8080, Hostname: "b.example.com", TLS: &ListenerTLS{Mode: TLSPassthrough}}
	x.Gateways[0].Listeners = append(x.Gateways[0].Listeners, l2)
	if err := x.Validate(); err != nil {
		t.Fatalf("HTTPS and TLS listeners with distinct SNI rejected: %v", err)
	}
	l2.Hostname = "a.example.com"
	if err := x.Validate(); err == nil || !strings.Contains(err.Error(), "same server name") {
		t.Errorf("two TLS listeners with one SNI: err = %v", err)
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	x := valid()
	c := x.DeepCopy()
	if !reflect.DeepEqual(x, c) {
		t.Fatal("copy differs from the original")
	}
	c.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Endpoints[0].Port = 1
	c.Gateways[0].Listeners[0].HTTPRoutes[0].Timeouts.Request.Duration = time.Hour
	if x.Gateways[0].Listeners[0].HTTPRoutes[0].Backends.Backends[0].Endpoints[0].Port != 8080 ||
		x.Gateways[0].Listeners[0].HTTPRoutes[0].Timeouts.Request.Duration != 1500*time.Millisecond {
		t.Error("changing the copy changed the original")
	}
}

func TestDurationYAML(t *testing.T) {
	b, err := yaml.Marshal(Timeouts{Request: NewDuration(1500 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "request: 1.5s\n" {
		t.Errorf("yaml = %q, want request: 1.5s", b)
	}
	var back Timeouts
	if err := yaml.Unmarshal(b, &back); err != nil || back.Request.Duration != 1500*time.Millisecond {
		t.Errorf("round trip = %v, %v", back.Request, err)
	}
	if err := yaml.Unmarshal([]byte("request: 5\n"), &back); err == nil {
		t.Error("a bare number was accepted as a duration")
	}
}
