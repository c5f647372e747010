package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// grpcEchoed are the request headers a gRPC backend echoes back as
// response headers "echo-<name>", so a test sees what reached it.
var grpcEchoed = []string{"x-route", "x-routed-by", "x-header-set", "x-header-add", "x-header-remove"}

// grpcBackend is a grpc.testing.TestService that answers EmptyCall,
// UnaryCall and StreamingOutputCall with the response header x-backend
// (its name), x-method (the method it was called as) and the echoed
// request headers.
type grpcBackend struct {
	testpb.UnimplementedTestServiceServer
	name string
}

func (b *grpcBackend) header(ctx context.Context) metadata.MD {
	in, _ := metadata.FromIncomingContext(ctx)
	method, _ := grpc.Method(ctx)
	out := metadata.Pairs("x-backend", b.name, "x-method", method)
	for _, k := range grpcEchoed {
		out.Append("echo-"+k, in.Get(k)...)
	}
	return out
}

func (b *grpcBackend) EmptyCall(ctx context.Context, _ *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, grpc.SetHeader(ctx, b.header(ctx))
}

func (b *grpcBackend) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return &testpb.SimpleResponse{ServerId: b.name}, grpc.SetHeader(ctx, b.header(ctx))
}

// StreamingOutputCall sends one message per response parameter, with a
// payload of the size asked for.
func (b *grpcBackend) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[testpb.StreamingOutputCallResponse]) error {
	if err := s.SendHeader(b.header(s.Context())); err != nil {
		return err
	}
	for _, p := range req.GetResponseParameters() {
		if err := s.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, p.GetSize())}}); err != nil {
			return err
		}
	}
	return nil
}

// startGRPCBackend serves a grpcBackend named name on a loopback port and
// returns the port.
func startGRPCBackend(t *testing.T, name string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, &grpcBackend{name: name})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().(*net.TCPAddr).Port
}

// grpcRoutesYAML is one GRPCRoute for grpc.example.com. Its rules, in this
// order: UnaryCall to grpc-a; StreamingOutputCall to grpc-b, setting
// x-routed-by; UnaryCall with header x-route: b to grpc-b, setting
// x-routed-by (it must win over the first rule: same service and method,
// more header matches); the whole grpc.health.v1.Health service to a
// Service that does not exist.
const grpcRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - matches:
    - method: {type: Exact, service: grpc.testing.TestService, method: UnaryCall}
    backendRefs: [{name: grpc-a, port: 80}]
  - matches:
    - method: {service: grpc.testing.TestService, method: StreamingOutputCall}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: x-routed-by, value: streaming-rule}]
    backendRefs: [{name: grpc-b, port: 80}]
  - matches:
    - method: {type: Exact, service: grpc.testing.TestService, method: UnaryCall}
      headers: [{name: x-route, value: b}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: x-routed-by, value: header-rule}]
    backendRefs: [{name: grpc-b, port: 80}]
  - matches:
    - method: {type: Exact, service: grpc.health.v1.Health}
    backendRefs: [{name: does-not-exist, port: 80}]
`

// grpcResult is what one gRPC call through the gateway gave: the status,
// the response headers and the trailers.
type grpcResult struct {
	code            codes.Code
	msg             string
	header, trailer metadata.MD
}

// fromEnvoy says whether Envoy itself answered: a trailers-only reply
// (grpc-go shows its headers as trailers) with Envoy's server header and
// no x-backend, rather than a backend's answer or a client-side error.
func (r grpcResult) fromEnvoy() bool {
	return len(r.header) == 0 && slices.Equal(r.trailer.Get("server"), []string{"envoy"}) && r.trailer.Get("x-backend") == nil
}

func (r grpcResult) String() string {
	return fmt.Sprintf("%s %q, x-backend %q, x-method %q, echo-x-routed-by %q, from Envoy %v",
		r.code, r.msg, r.header.Get("x-backend"), r.header.Get("x-method"), r.header.Get("echo-x-routed-by"), r.fromEnvoy())
}

// grpcCall invokes method (a full name "/service/method") on conn as a
// unary call with req and the request headers kv (name, value pairs).
func grpcCall(conn *grpc.ClientConn, method string, req, resp any, kv ...string) grpcResult {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, kv...)
	var h, tr metadata.MD
	err := conn.Invoke(ctx, method, req, resp, grpc.Header(&h), grpc.Trailer(&tr))
	st := status.Convert(err)
	return grpcResult{code: st.Code(), msg: st.Message(), header: h, trailer: tr}
}

// dialGateway opens an h2c (prior knowledge) client connection to the
// gateway with the given :authority. It reconnects quickly, so that
// polling for the configuration is not slowed down by backoff while Envoy
// starts.
func dialGateway(t *testing.T, port int, authority string) *grpc.ClientConn {
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(authority),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond},
			MinConnectTimeout: 2 * time.Second,
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestGRPCRoute shows that a GRPCRoute on an HTTP listener serves real
// gRPC (h2c with prior knowledge) through Envoy to two grpc-go backends,
// one behind a Service port with appProtocol kubernetes.io/h2c and one
// behind a plain port:
//   - an exact service/method match picks its backend, which is called as
//     that method;
//   - a server-streaming call delivers every message;
//   - a rule with a header match wins over an earlier rule with the same
//     service and method and no header match;
//   - a RequestHeaderModifier's header reaches the backend, replacing the
//     client's value, on its own rule only;
//   - a rule whose Service does not exist gets UNAVAILABLE from Envoy for
//     every method of its service while the route's other rules keep
//     serving, and the route says ResolvedRefs=False(BackendNotFound);
//   - a method, a service or a host that no rule matches gets UNIMPLEMENTED
//     from Envoy.
func TestGRPCRoute(t *testing.T) {
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends": []gatewayBackend{
				{Name: "grpc-a", Port: startGRPCBackend(t, "a"), AppProtocol: "kubernetes.io/h2c"},
				// No appProtocol: a GRPCRoute's backends speak HTTP/2 anyway.
				{Name: "grpc-b", Port: startGRPCBackend(t, "b")},
			},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), grpcRoutesYAML, nil)
	})
	conn := dialGateway(t, f.gwPort, "grpc.example.com")
	const unary = "/grpc.testing.TestService/UnaryCall"

	// Wait until the configuration is served: both backends answer.
	began := time.Now()
	var a, b grpcResult
	for deadline := began.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		a = grpcCall(conn, unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{})
		b = grpcCall(conn, unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{}, "x-route", "b")
		if a.code == codes.OK && b.code == codes.OK {
			break
		}
	}
	if a.code != codes.OK || b.code != codes.OK {
		t.Fatalf("no configuration served within 30s: UnaryCall: %s; UnaryCall with x-route: b: %s", a, b)
	}
	t.Logf("GRPCRoute answered %s after start", time.Since(began).Round(time.Millisecond))

	for _, c := range []struct {
		name, method string
		req, resp    any
		headers      []string
		code         codes.Code
		// backend is the x-backend header expected ("" for an answer of
		// Envoy's own) and routedBy the x-routed-by values the backend saw.
		backend  string
		routedBy []string
	}{
		{"exact service and method", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			nil, codes.OK, "a", nil},
		{"the rule's own headers only", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			[]string{"x-routed-by", "client"}, codes.OK, "a", []string{"client"}},
		{"header match wins over the same method without", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			[]string{"x-route", "b"}, codes.OK, "b", []string{"header-rule"}},
		{"set replaces the client's header", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			[]string{"x-route", "b", "x-routed-by", "client"}, codes.OK, "b", []string{"header-rule"}},
		{"header value must match", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			[]string{"x-route", "c"}, codes.OK, "a", nil},
		{"missing Service answers UNAVAILABLE", "/grpc.health.v1.Health/Check", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{},
			nil, codes.Unavailable, "", nil},
		{"service-only match covers every method", "/grpc.health.v1.Health/Watch", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{},
			nil, codes.Unavailable, "", nil},
		{"the route's other rules still serve", unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{},
			nil, codes.OK, "a", nil},
		{"unmatched method (the backends implement it)", "/grpc.testing.TestService/EmptyCall", &testpb.Empty{}, &testpb.Empty{},
			nil, codes.Unimplemented, "", nil},
		{"unmatched service", "/grpc.testing.UnimplementedService/UnimplementedCall", &testpb.Empty{}, &testpb.Empty{},
			nil, codes.Unimplemented, "", nil},
		{"service match is the whole name", "/grpc.health.v1.HealthX/Check", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{},
			nil, codes.Unimplemented, "", nil},
	} {
		r := grpcCall(conn, c.method, c.req, c.resp, c.headers...)
		if r.code != c.code || strings.Join(r.header.Get("x-backend"), ",") != c.backend ||
			!slices.Equal(r.header.Get("echo-x-routed-by"), c.routedBy) {
			t.Errorf("%s: %s %q = %s; want %s, x-backend %q, echo-x-routed-by %q",
				c.name, c.method, c.headers, r, c.code, c.backend, c.routedBy)
			continue
		}
		if c.backend != "" && !slices.Equal(r.header.Get("x-method"), []string{c.method}) {
			t.Errorf("%s: the backend was called as %q, want %q", c.name, r.header.Get("x-method"), c.method)
		}
		if c.backend == "" && !r.fromEnvoy() {
			t.Errorf("%s: %s is not Envoy's own reply (headers %v, trailers %v)", c.name, r, r.header, r.trailer)
		}
		t.Logf("%s: %s %q -> %s", c.name, c.method, c.headers, r)
	}

	// The server-streaming rule: every message arrives, from grpc-b.
	sizes := []int32{1, 2, 3, 4, 5}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := testpb.NewTestServiceClient(conn).StreamingOutputCall(
		metadata.AppendToOutgoingContext(ctx, "x-routed-by", "client"),
		&testpb.StreamingOutputCallRequest{ResponseParameters: responseParameters(sizes)})
	if err != nil {
		t.Fatal(err)
	}
	var got []int32
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("StreamingOutputCall: after %d messages: %v", len(got), err)
		}
		got = append(got, int32(len(m.GetPayload().GetBody())))
	}
	h, _ := stream.Header()
	if !slices.Equal(got, sizes) || !slices.Equal(h.Get("x-backend"), []string{"b"}) ||
		!slices.Equal(h.Get("echo-x-routed-by"), []string{"streaming-rule"}) {
		t.Errorf("StreamingOutputCall: got payload sizes %v from x-backend %q with echo-x-routed-by %q; want %v from b with [streaming-rule]",
			got, h.Get("x-backend"), h.Get("echo-x-routed-by"), sizes)
	} else {
		t.Logf("StreamingOutputCall: %d messages from x-backend %q", len(got), h.Get("x-backend"))
	}

	// A host the route does not list.
	other := dialGateway(t, f.gwPort, "other.example.com")
	if r := grpcCall(other, unary, &testpb.SimpleRequest{}, &testpb.SimpleResponse{}); r.code != codes.Unimplemented || !r.fromEnvoy() {
		t.Errorf("UnaryCall for other.example.com = %s; want Unimplemented from the gateway", r)
	}

	// Status: the route is accepted, and says which backend is missing.
	const routeStatus = "GRPCRoute default/grpc -> default/gw:"
	f.waitOutput("GRPCRoute status", 0, regexp.MustCompile(regexp.QuoteMeta(routeStatus)), 30*time.Second)
	line := f.lastLine(routeStatus)
	if !strings.Contains(line, "Accepted=True(Accepted) ResolvedRefs=False(BackendNotFound)") || !strings.Contains(line, "does-not-exist") {
		t.Errorf("GRPCRoute status: %s; want Accepted=True ResolvedRefs=False(BackendNotFound) naming does-not-exist", line)
	} else {
		t.Logf("status: %s", line)
	}
	if l := f.lastLine("Gateway default/gw listener http:"); !strings.Contains(l, "attachedRoutes=1 ") {
		t.Errorf("listener status: %q; want attachedRoutes=1", l)
	}
}

func responseParameters(sizes []int32) []*testpb.ResponseParameters {
	var out []*testpb.ResponseParameters
	for _, s := range sizes {
		out = append(out, &testpb.ResponseParameters{Size: s})
	}
	return out
}

// grpcHeaderRoutesYAML is one GRPCRoute for grpc.example.com: EmptyCall to
// grpc-a through a RequestHeaderModifier that sets X-Header-Set, adds
// X-Header-Add and removes X-Header-Remove (the names capitalised, the
// client's lower-case), and UnaryCall to grpc-a without filters.
const grpcHeaderRoutesYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: headers, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: [grpc.example.com]
  rules:
  - matches:
    - method: {service: grpc.testing.TestService, method: EmptyCall}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Header-Set, value: set-value}]
        add: [{name: X-Header-Add, value: added}]
        remove: [X-Header-Remove]
    backendRefs: [{name: grpc-a, port: 80}]
  - matches:
    - method: {service: grpc.testing.TestService, method: UnaryCall}
    backendRefs: [{name: grpc-a, port: 80}]
`

// TestGRPCRouteRequestHeaderModifier shows that a GRPCRoute rule's
// RequestHeaderModifier (Gateway API v1.7.0 standard:
// GRPCRouteRequestHeaderModifier) changes the metadata the gRPC backend
// receives, matching header names case-insensitively: set gives its value
// whether or not the client sent the header, add appends its value after
// the client's, remove drops the client's header; the route's rule without
// the filter passes the client's headers unchanged.
func TestGRPCRouteRequestHeaderModifier(t *testing.T) {
	f := startWith(t, func(f *fixture) {
		render(t, filepath.Join(f.dir, "gateway.yaml"), gatewayYAML, map[string]any{
			"GatewayPort": f.gwPort,
			"Backends":    []gatewayBackend{{Name: "grpc-a", Port: startGRPCBackend(t, "a")}},
		})
		render(t, filepath.Join(f.dir, "routes.yaml"), grpcHeaderRoutesYAML, nil)
	})
	conn := dialGateway(t, f.gwPort, "grpc.example.com")
	const empty, unary = "/grpc.testing.TestService/EmptyCall", "/grpc.testing.TestService/UnaryCall"
	call := func(method string, kv ...string) grpcResult {
		if method == empty {
			return grpcCall(conn, method, &testpb.Empty{}, &testpb.Empty{}, kv...)
		}
		return grpcCall(conn, method, &testpb.SimpleRequest{}, &testpb.SimpleResponse{}, kv...)
	}
	took := poll(t, "GRPCRoute headers served", func() error {
		for _, m := range []string{empty, unary} {
			if r := call(m); r.code != codes.OK || !slices.Equal(r.header.Get("x-method"), []string{m}) {
				return fmt.Errorf("%s: %s", m, r)
			}
		}
		return nil
	})
	t.Logf("GRPCRoute answered after %s", took.Round(time.Millisecond))

	client := []string{"x-header-set", "client-set", "x-header-add", "client-add", "x-header-remove", "client-remove"}
	for _, c := range []struct {
		name, method string
		headers      []string
		// set, add and remove are the values of x-header-set,
		// x-header-add and x-header-remove the backend received.
		set, add, remove []string
	}{
		{"the filter without the client's headers", empty, nil, []string{"set-value"}, []string{"added"}, nil},
		{"the filter over the client's headers", empty, client, []string{"set-value"}, []string{"client-add", "added"}, nil},
		{"the rule without the filter", unary, client, []string{"client-set"}, []string{"client-add"}, []string{"client-remove"}},
	} {
		r := call(c.method, c.headers...)
		set, add, remove := r.header.Get("echo-x-header-set"), r.header.Get("echo-x-header-add"), r.header.Get("echo-x-header-remove")
		if r.code != codes.OK || !slices.Equal(r.header.Get("x-method"), []string{c.method}) ||
			!slices.Equal(set, c.set) || !slices.Equal(add, c.add) || !slices.Equal(remove, c.remove) {
			t.Errorf("%s: %s %q = %s; the backend saw x-header-set %q, x-header-add %q, x-header-remove %q; want OK from %s with %q, %q, %q",
				c.name, c.method, c.headers, r, set, add, remove, c.method, c.set, c.add, c.remove)
		} else {
			t.Logf("%s: %s %q: the backend saw x-header-set %q, x-header-add %q, x-header-remove %q", c.name, c.method, c.headers, set, add, remove)
		}
	}
	f.waitOutput("GRPCRoute status", 0, regexp.MustCompile(regexp.QuoteMeta(
		"GRPCRoute default/headers -> default/gw: Accepted=True(Accepted) ResolvedRefs=True(ResolvedRefs)")), l4Deadline)
}
