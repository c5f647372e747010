package grpcechoserver

import (
	"context"
	"net"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// echoServer answers Echo and EchoTwo the way the echo pods do (method,
// headers, authority, pod context) and leaves EchoThree to
// UnimplementedGrpcEchoServer.
type echoServer struct {
	UnimplementedGrpcEchoServer
}

func (echoServer) Echo(ctx context.Context, req *EchoRequest) (*EchoResponse, error) {
	return answer(ctx, req), nil
}

func (echoServer) EchoTwo(ctx context.Context, req *EchoRequest) (*EchoResponse, error) {
	return answer(ctx, req), nil
}

func answer(ctx context.Context, req *EchoRequest) *EchoResponse {
	method, _ := grpc.Method(ctx)
	md, _ := metadata.FromIncomingContext(ctx)
	a := &Assertions{
		FullyQualifiedMethod: method,
		Context:              &Context{Namespace: "ns", ServiceName: "svc", Pod: "backend-1-abc"},
	}
	if v := md.Get(":authority"); len(v) > 0 {
		a.Authority = v[0]
	}
	for k, vs := range md {
		for _, v := range vs {
			a.Headers = append(a.Headers, &Header{Key: k, Value: v})
		}
	}
	return &EchoResponse{Assertions: a, Request: req}
}

// TestClientAndServerOnLoopback: a GrpcEcho server registered with
// RegisterGrpcEchoServer on 127.0.0.1 answers NewGrpcEchoClient's Echo and
// EchoTwo at their fully qualified method names with the request's
// authority and metadata, and EchoThree with Unimplemented.
func TestClientAndServerOnLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	RegisterGrpcEchoServer(srv, echoServer{})
	go srv.Serve(l)
	defer srv.Stop()

	conn, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("grpc.example.com"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := NewGrpcEchoClient(conn)
	ctx := metadata.NewOutgoingContext(t.Context(), metadata.Pairs("x-test", "v1"))

	for name, call := range map[string]func(context.Context, *EchoRequest, ...grpc.CallOption) (*EchoResponse, error){
		"Echo":    client.Echo,
		"EchoTwo": client.EchoTwo,
	} {
		resp, err := call(ctx, &EchoRequest{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		a := resp.GetAssertions()
		if want := "/gateway_api_conformance.echo_basic.grpcecho.GrpcEcho/" + name; a.GetFullyQualifiedMethod() != want {
			t.Errorf("%s: method %q, want %q", name, a.GetFullyQualifiedMethod(), want)
		}
		if a.GetAuthority() != "grpc.example.com" {
			t.Errorf("%s: authority %q", name, a.GetAuthority())
		}
		if !slices.ContainsFunc(a.GetHeaders(), func(h *Header) bool { return h.GetKey() == "x-test" && h.GetValue() == "v1" }) {
			t.Errorf("%s: x-test: v1 missing from %v", name, a.GetHeaders())
		}
		if c := a.GetContext(); c.GetNamespace() != "ns" || c.GetPod() != "backend-1-abc" || c.GetServiceName() != "svc" {
			t.Errorf("%s: context %v", name, c)
		}
	}
	if _, err := client.EchoThree(ctx, &EchoRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("EchoThree: %v, want code Unimplemented", err)
	}
}

// TestNames: the proto package, service and message full names the echo
// pods and the suite use.
func TestNames(t *testing.T) {
	const pkg = "gateway_api_conformance.echo_basic.grpcecho."
	for msg, want := range map[proto.Message]string{
		&Header{}: "Header", &Context{}: "Context", &TLSAssertions{}: "TLSAssertions",
		&Assertions{}: "Assertions", &EchoRequest{}: "EchoRequest", &EchoResponse{}: "EchoResponse",
	} {
		if got := string(msg.ProtoReflect().Descriptor().FullName()); got != pkg+want {
			t.Errorf("message %s, want %s", got, pkg+want)
		}
	}
	if GrpcEcho_ServiceDesc.ServiceName != pkg+"GrpcEcho" {
		t.Errorf("service %s", GrpcEcho_ServiceDesc.ServiceName)
	}
	var methods []string
	for _, m := range GrpcEcho_ServiceDesc.Methods {
		methods = append(methods, m.MethodName)
	}
	if !slices.Equal(methods, []string{"Echo", "EchoTwo", "EchoThree"}) {
		t.Errorf("methods %v", methods)
	}
}

// TestWireFormat: an EchoResponse with every field set encodes to the bytes
// built by hand from the schema's field numbers and wire types, and those
// bytes decode back to an equal message.
func TestWireFormat(t *testing.T) {
	msg := &EchoResponse{
		Assertions: &Assertions{
			FullyQualifiedMethod: "/m",
			Headers:              []*Header{{Key: "k", Value: "v"}},
			Authority:            "a",
			Context:              &Context{Namespace: "n", Ingress: "i", ServiceName: "s", Pod: "p"},
			TlsAssertions: &TLSAssertions{
				Version: "TLSv1.3", NegotiatedProtocol: "h2", ServerName: "sni",
				CipherSuite: "c", PeerCertificates: []string{"cert1", "cert2"},
			},
		},
		Request: &EchoRequest{},
	}
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
	}
	sub := func(b []byte, num protowire.Number, m []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
	}
	header := str(str(nil, 1, "k"), 2, "v")
	podCtx := str(str(str(str(nil, 1, "n"), 2, "i"), 3, "s"), 4, "p")
	tlsA := str(str(str(str(str(str(nil, 1, "TLSv1.3"), 2, "h2"), 3, "sni"), 4, "c"), 5, "cert1"), 5, "cert2")
	assertions := str(nil, 1, "/m")
	assertions = sub(assertions, 2, header)
	assertions = str(assertions, 3, "a")
	assertions = sub(assertions, 4, podCtx)
	assertions = sub(assertions, 5, tlsA)
	want := sub(sub(nil, 1, assertions), 2, nil)

	got, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("encoding\n got %x\nwant %x", got, want)
	}
	back := &EchoResponse{}
	if err := proto.Unmarshal(want, back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, msg) {
		t.Errorf("decoded %v, want %v", back, msg)
	}
}
