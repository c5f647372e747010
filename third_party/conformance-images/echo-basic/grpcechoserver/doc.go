// Package grpcechoserver holds the Go code generated from grpcecho.proto: the
// messages (EchoRequest, EchoResponse, Assertions, ...), the client
// (NewGrpcEchoClient) and the server registration (RegisterGrpcEchoServer,
// UnimplementedGrpcEchoServer) of the conformance echo server's gRPC service
// gateway_api_conformance.echo_basic.grpcecho.GrpcEcho. The Gateway API
// conformance suite imports it under this path; the echo pods speak the same
// wire format.
package grpcechoserver

//go:generate make -C ../.. generate
