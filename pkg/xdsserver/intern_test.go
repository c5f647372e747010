package xdsserver

import (
	"testing"
	"unsafe"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// TestInternRequestSharesNamesAcrossRequests: two requests decoded from
// the wire (each name its own allocation) name the same resources; after
// internRequest their names and initial versions point to the same bytes,
// and the requests still say what they said.
func TestInternRequestSharesNamesAcrossRequests(t *testing.T) {
	wire, err := proto.Marshal(&discoveryv3.DeltaDiscoveryRequest{
		ResourceNamesSubscribe:  []string{"default/svc-1", "default/svc-2"},
		InitialResourceVersions: map[string]string{"default/svc-1": "v1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var reqs [2]*discoveryv3.DeltaDiscoveryRequest
	for i := range reqs {
		reqs[i] = &discoveryv3.DeltaDiscoveryRequest{}
		if err := proto.Unmarshal(wire, reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	data := func(s string) *byte { return unsafe.StringData(s) }
	if data(reqs[0].ResourceNamesSubscribe[0]) == data(reqs[1].ResourceNamesSubscribe[0]) {
		t.Fatal("decoded requests share their strings already: the test shows nothing")
	}
	for _, r := range reqs {
		internRequest(r)
	}
	for i := range 2 {
		a, b := reqs[0].ResourceNamesSubscribe[i], reqs[1].ResourceNamesSubscribe[i]
		if a != b || data(a) != data(b) {
			t.Errorf("name %d: %q and %q are not the same bytes after internRequest", i, a, b)
		}
	}
	for name, version := range reqs[0].InitialResourceVersions {
		var other string
		var otherVersion string
		for n, v := range reqs[1].InitialResourceVersions {
			other, otherVersion = n, v
		}
		if name != "default/svc-1" || version != "v1" || data(name) != data(other) || data(version) != data(otherVersion) {
			t.Errorf("initial versions %v and %v: want {default/svc-1: v1}, the same bytes", reqs[0].InitialResourceVersions, reqs[1].InitialResourceVersions)
		}
	}
}
