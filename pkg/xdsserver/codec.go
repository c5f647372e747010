package xdsserver

// Encode once, send many (issue 30 item 2). go-control-plane encodes each
// resource of a snapshot once, whoever it goes to (its cachedResource keeps
// the bytes), and wraps them per stream in a response whose Any values
// share those bytes. gRPC's proto codec then encodes that response anew for
// every stream: the resources' bytes are copied into a buffer as large as
// the response (a megabyte for a route configuration of 3000 virtual
// hosts), one per stream sending at that moment. At a thousand proxies a
// one-route change copied a gigabyte and held as much of buffers.
//
// sharingCodec encodes a discovery response as the protobuf encoding of its
// fields around the resources' own bytes: the envelope of each resource
// (name, version, the Any's type URL) is written anew, small, and the
// resource's encoding is referenced where it lies, not copied. The wire
// bytes differ from proto.Marshal's only in the order of fields (every
// field but the resources first), which the protobuf encoding allows
// ("Field Order": parsers accept fields in any order; concatenated
// encodings merge).

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	gproto "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// shareAbove is the least size of a resource's encoding that is
// referenced rather than copied: below it, a separate buffer costs more
// than the copy.
const shareAbove = 4 << 10

// The field numbers of the responses' resources (envoy.service.discovery.v3:
// DiscoveryResponse.resources, DeltaDiscoveryResponse.resources,
// Resource.resource) and of an Any's fields (google.protobuf.Any).
const (
	sotwResourcesField  protowire.Number = 2
	deltaResourcesField protowire.Number = 2
	resourceAnyField    protowire.Number = 2
	anyTypeURLField     protowire.Number = 1
	anyValueField       protowire.Number = 2
)

// sharingCodec is gRPC's proto codec, except that it encodes the discovery
// responses (DiscoveryResponse, DeltaDiscoveryResponse) around their
// resources' bytes (see above). It decodes as the proto codec does.
type sharingCodec struct {
	encoding.CodecV2
}

// newSharingCodec returns the codec for grpc.ForceServerCodecV2.
func newSharingCodec() sharingCodec {
	return sharingCodec{encoding.GetCodecV2(proto.Name)}
}

// Marshal returns the encoding of v. A discovery response's resources of
// shareAbove bytes or more are referenced in the result (the caller must
// not modify them; go-control-plane never does), the rest is copied.
func (c sharingCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case *discoveryv3.DeltaDiscoveryResponse:
		rest := &discoveryv3.DeltaDiscoveryResponse{}
		shallowCopy(rest, m, deltaResourcesField)
		head, err := gproto.Marshal(rest)
		if err != nil {
			return nil, err
		}
		w := &sliceWriter{cur: head}
		for _, r := range m.GetResources() {
			env := &discoveryv3.Resource{}
			shallowCopy(env, r, resourceAnyField)
			e, err := gproto.Marshal(env)
			if err != nil {
				return nil, err
			}
			a := r.GetResource()
			anyLen := anySize(a)
			size := len(e)
			if a != nil {
				size += protowire.SizeTag(resourceAnyField) + protowire.SizeBytes(anyLen)
			}
			w.tag(deltaResourcesField, size)
			w.bytes(e)
			if a != nil {
				w.tag(resourceAnyField, anyLen)
				w.any(a)
			}
		}
		return w.slice(), nil
	case *discoveryv3.DiscoveryResponse:
		rest := &discoveryv3.DiscoveryResponse{}
		shallowCopy(rest, m, sotwResourcesField)
		head, err := gproto.Marshal(rest)
		if err != nil {
			return nil, err
		}
		w := &sliceWriter{cur: head}
		for _, a := range m.GetResources() {
			w.tag(sotwResourcesField, anySize(a))
			w.any(a)
		}
		return w.slice(), nil
	}
	return c.CodecV2.Marshal(v)
}

// shallowCopy sets the fields of src but skip into dst, a new message of
// the same type, sharing their values (the generated messages hold
// internal state that must not be copied by value). Unknown fields are
// not copied: go-control-plane's responses have none.
func shallowCopy[M gproto.Message](dst, src M, skip protowire.Number) {
	d := dst.ProtoReflect()
	src.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() != skip {
			d.Set(fd, v)
		}
		return true
	})
}

// anySize is the size of a's encoding with its fields type_url and value.
func anySize(a *anypb.Any) int {
	n := 0
	if u := a.GetTypeUrl(); u != "" {
		n += protowire.SizeTag(anyTypeURLField) + protowire.SizeBytes(len(u))
	}
	if v := a.GetValue(); len(v) > 0 {
		n += protowire.SizeTag(anyValueField) + protowire.SizeBytes(len(v))
	}
	return n
}

// sliceWriter builds a BufferSlice of copied bytes (cur, growing) and
// referenced ones.
type sliceWriter struct {
	out mem.BufferSlice
	cur []byte
}

// tag appends the tag of a length-delimited field num and its length n.
func (w *sliceWriter) tag(num protowire.Number, n int) {
	w.cur = protowire.AppendTag(w.cur, num, protowire.BytesType)
	w.cur = protowire.AppendVarint(w.cur, uint64(n))
}

func (w *sliceWriter) bytes(b []byte) { w.cur = append(w.cur, b...) }

// any appends a's fields: the type URL copied, the value copied or, from
// shareAbove bytes, referenced.
func (w *sliceWriter) any(a *anypb.Any) {
	if u := a.GetTypeUrl(); u != "" {
		w.cur = protowire.AppendTag(w.cur, anyTypeURLField, protowire.BytesType)
		w.cur = protowire.AppendString(w.cur, u)
	}
	v := a.GetValue()
	if len(v) == 0 {
		return
	}
	w.tag(anyValueField, len(v))
	if len(v) < shareAbove {
		w.cur = append(w.cur, v...)
		return
	}
	w.out = append(w.out, mem.SliceBuffer(w.cur), mem.SliceBuffer(v))
	w.cur = nil
}

// slice returns what was written.
func (w *sliceWriter) slice() mem.BufferSlice {
	if len(w.cur) > 0 {
		w.out = append(w.out, mem.SliceBuffer(w.cur))
	}
	return w.out
}
