// Package udpechoserver is the UDP echo protocol of the Gateway API
// conformance echo server (echo-basic started with UDP_ECHO_SERVER set):
// every datagram received is answered, to its sender, with one datagram
// holding an EchoResponse as JSON. Serve is a server speaking it.
package udpechoserver

import (
	"context"
	"encoding/json"
	"errors"
	"net"
)

// Context identifies the answering pod. The echo pods fill it from their
// environment: NAMESPACE, INGRESS_NAME, SERVICE_NAME and POD_NAME (an unset
// variable gives "").
type Context struct {
	Namespace string `json:"namespace"`
	Ingress   string `json:"ingress"`
	Service   string `json:"service"`
	Pod       string `json:"pod"`
}

// EchoResponse is the JSON object of one answer: the received datagram's
// payload, unchanged, in "request" and the pod's Context fields at the top
// level:
//
//	{"request":"...","namespace":"...","ingress":"...","service":"...","pod":"..."}
type EchoResponse struct {
	Request string `json:"request"`
	Context
}

// maxDatagram is the largest UDP payload (65535 minus the 8-byte UDP
// header), so no datagram is cut short.
const maxDatagram = 65527

// Serve answers every datagram read from conn with the JSON of an
// EchoResponse carrying the payload and pod, sent to the datagram's source.
// It returns nil after ctx ends (closing conn), otherwise the read error.
// A failed write drops that answer only.
func Serve(ctx context.Context, conn net.PacketConn, pod Context) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		answer, err := json.Marshal(EchoResponse{Request: string(buf[:n]), Context: pod})
		if err != nil {
			continue
		}
		_, _ = conn.WriteTo(answer, from)
	}
}
