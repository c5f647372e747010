package extauthz

import (
	"context"
	"net"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	authv3 "github.com/envoyproxy/go-control-plane/envoy/service/auth/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StartGRPC starts an envoy.service.auth.v3.Authorization server on
// 127.0.0.1:0 (plaintext HTTP/2; point an envoy_grpc cluster with
// http2_protocol_options at Server.Addr). It is stopped at t's cleanup.
// A check is answered with CheckResponse.status OK and an OkHttpResponse
// carrying Decision.Headers when allowed, else PERMISSION_DENIED and a
// DeniedHttpResponse with Decision.Status, Body and Headers.
func StartGRPC(t testing.TB) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return cleanup(t, ServeGRPC(lis))
}

// ServeGRPC is StartGRPC on a listener of the caller's (a program that is
// not a test: cmd/xds-testservers); Server.Stop closes it.
func ServeGRPC(lis net.Listener) *Server {
	gs := grpc.NewServer()
	s := newServer(lis.Addr().String(), gs.Stop)
	authv3.RegisterAuthorizationServer(gs, &authzService{s: s})
	go func() { _ = gs.Serve(lis) }()
	return s
}

type authzService struct {
	authv3.UnimplementedAuthorizationServer
	s *Server
}

// Check implements envoy.service.auth.v3.Authorization.Check.
func (a *authzService) Check(ctx context.Context, req *authv3.CheckRequest) (*authv3.CheckResponse, error) {
	h := req.GetAttributes().GetRequest().GetHttp()
	c := Check{Method: h.GetMethod(), Path: h.GetPath(), Host: h.GetHost(), Headers: map[string]string{}, Body: h.GetBody()}
	if len(h.GetRawBody()) > 0 {
		c.Body = string(h.GetRawBody())
	}
	for k, v := range h.GetHeaders() {
		c.Headers[strings.ToLower(k)] = v
	}
	for _, hv := range h.GetHeaderMap().GetHeaders() {
		v := hv.GetValue()
		if len(hv.GetRawValue()) > 0 {
			v = string(hv.GetRawValue())
		}
		c.Headers[strings.ToLower(hv.GetKey())] = v
	}
	d, ok := a.s.decide(ctx, c)
	if !ok {
		return nil, status.Error(codes.Unavailable, "extauthz test server: delay cut short")
	}
	if d.Allowed() {
		return &authv3.CheckResponse{
			Status:       &rpcstatus.Status{Code: int32(codes.OK)},
			HttpResponse: &authv3.CheckResponse_OkResponse{OkResponse: &authv3.OkHttpResponse{Headers: headerOptions(d.Headers)}},
		}, nil
	}
	return &authv3.CheckResponse{
		Status: &rpcstatus.Status{Code: int32(codes.PermissionDenied)},
		HttpResponse: &authv3.CheckResponse_DeniedResponse{DeniedResponse: &authv3.DeniedHttpResponse{
			Status:  &typev3.HttpStatus{Code: typev3.StatusCode(d.Status)},
			Headers: headerOptions(d.Headers),
			Body:    d.Body,
		}},
	}, nil
}

func headerOptions(h map[string]string) []*corev3.HeaderValueOption {
	var out []*corev3.HeaderValueOption
	for k, v := range h {
		out = append(out, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: k, Value: v},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return out
}
