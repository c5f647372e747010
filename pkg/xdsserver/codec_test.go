package xdsserver

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	gproto "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
)

// value is n bytes of a resource's encoding (any bytes: the codec does not
// look inside).
func value(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// refersTo reports whether one of s's buffers is v itself (not a copy).
func refersTo(s mem.BufferSlice, v []byte) bool {
	for _, b := range s {
		if d := b.ReadOnlyData(); len(d) == len(v) && &d[0] == &v[0] {
			return true
		}
	}
	return false
}

// TestSharingCodecDecodesToTheResponse: what sharingCodec writes for a
// delta and a state-of-the-world response decodes to the response itself
// (every field: versions, nonces, removed names, a TTL, an empty Any, a
// Resource without Any), and a resource's encoding of shareAbove bytes or
// more is referenced, not copied, while a small one is copied. Other
// messages are encoded as by gRPC's proto codec.
func TestSharingCodecDecodesToTheResponse(t *testing.T) {
	c := newSharingCodec()
	large, small := value(shareAbove, 'L'), value(100, 's')
	delta := &discoveryv3.DeltaDiscoveryResponse{
		SystemVersionInfo: "v1",
		TypeUrl:           resource.RouteType,
		Nonce:             "7",
		RemovedResources:  []string{"gone"},
		ControlPlane:      &corev3.ControlPlane{Identifier: "xds-controller"},
		Resources: []*discoveryv3.Resource{
			{Name: "big", Version: "a", Resource: &anypb.Any{TypeUrl: resource.RouteType, Value: large}},
			{Name: "small", Version: "b", Aliases: []string{"x"}, Ttl: durationpb.New(time.Minute), Resource: &anypb.Any{TypeUrl: resource.RouteType, Value: small}},
			{Name: "empty", Version: "c", Resource: &anypb.Any{TypeUrl: resource.RouteType}},
			{Name: "heartbeat", Version: "d"},
		},
	}
	sotw := &discoveryv3.DiscoveryResponse{
		VersionInfo: "v2", TypeUrl: resource.ClusterType, Nonce: "8", Canary: true,
		Resources: []*anypb.Any{{TypeUrl: resource.ClusterType, Value: small}, {TypeUrl: resource.ClusterType, Value: large}, {}},
	}
	for _, tc := range []struct {
		msg       gproto.Message
		empty     gproto.Message
		shared    []byte
		notShared []byte
	}{
		{delta, &discoveryv3.DeltaDiscoveryResponse{}, large, small},
		{sotw, &discoveryv3.DiscoveryResponse{}, large, small},
	} {
		out, err := c.Marshal(tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		got := tc.empty
		if err := gproto.Unmarshal(out.Materialize(), got); err != nil {
			t.Fatalf("%T: the encoding does not decode: %v", tc.msg, err)
		}
		if !gproto.Equal(got, tc.msg) {
			t.Errorf("%T decodes to\n%v\nwant\n%v", tc.msg, got, tc.msg)
		}
		if !refersTo(out, tc.shared) {
			t.Errorf("%T: the %d-byte resource was copied, want it referenced", tc.msg, len(tc.shared))
		}
		if refersTo(out, tc.notShared) {
			t.Errorf("%T: the %d-byte resource was referenced, want it copied", tc.msg, len(tc.notShared))
		}
	}
	other := &corev3.Node{Id: "n", Cluster: "c"}
	out, err := c.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := encoding.GetCodecV2(proto.Name).Marshal(other)
	if !bytes.Equal(out.Materialize(), want.Materialize()) {
		t.Errorf("a Node is not encoded as the proto codec does")
	}
}

// BenchmarkResponseEncoding: one delta response carrying a route
// configuration of size bytes, encoded by gRPC's proto codec (a copy of
// the whole) and by sharingCodec (its envelope only), as each stream that
// sends it does.
func BenchmarkResponseEncoding(b *testing.B) {
	for _, size := range []int{16 << 10, 1 << 20} {
		resp := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: resource.RouteType, Nonce: "1", Resources: []*discoveryv3.Resource{
			{Name: "rc", Version: "v", Resource: &anypb.Any{TypeUrl: resource.RouteType, Value: value(size, 'r')}},
		}}
		for name, c := range map[string]encoding.CodecV2{"proto": encoding.GetCodecV2(proto.Name), "sharing": newSharingCodec()} {
			b.Run(fmt.Sprintf("%s/size=%d", name, size), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					out, err := c.Marshal(resp)
					if err != nil {
						b.Fatal(err)
					}
					out.Free()
				}
			})
		}
	}
}
