package xdsserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/google/go-cmp/cmp"

	"github.com/xds-controller/xds-controller/pkg/xdstranslator"
)

// servedRoute returns the encoding go-control-plane sends of route
// configuration "rc" of scope s's snapshot, decoded again.
func servedRoute(t *testing.T, s *Server, scope string) *routev3.RouteConfiguration {
	t.Helper()
	snap := s.cache.snapshot(scope)
	if snap == nil {
		t.Fatalf("scope %s has no snapshot", scope)
	}
	res := snap.GetResources(resource.RouteType)["rc"]
	if res == nil {
		t.Fatalf("scope %s serves no route configuration rc", scope)
	}
	b, err := cachev3.MarshalResource(res)
	if err != nil {
		t.Fatal(err)
	}
	got := &routev3.RouteConfiguration{}
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("the served encoding does not decode: %v", err)
	}
	return got
}

// TestServedRouteConfigurationDecodesToTheTranslated: what a proxy
// receives for a route configuration (the snapshot's form, whose virtual
// hosts travel as their kept encodings) decodes to the translated route
// configuration, virtual hosts in order and nothing else unknown, after
// the first publish, after one virtual host changed, one was added at the
// head and one removed, and for a configuration without virtual hosts.
func TestServedRouteConfigurationDecodesToTheTranslated(t *testing.T) {
	s := New(slog.Default())
	ctx := context.Background()
	a, b, c := vhost("a.example.com"), vhost("b.example.com"), vhost("c.example.com")
	changed := vhost("b.example.com")
	changed.Routes[0].Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/v2"}}
	for _, step := range []struct {
		name   string
		vhosts []*routev3.VirtualHost
	}{
		{"first", []*routev3.VirtualHost{a, b, c}},
		{"one changed", []*routev3.VirtualHost{a, changed, c}},
		{"one added at the head, one removed", []*routev3.VirtualHost{vhost("0.example.com"), a, changed}},
		{"none", nil},
	} {
		r := withConfig(cluster("one"), step.vhosts...)
		if _, _, err := s.Publish(ctx, "s", r); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		want := r.Routes[0].(*routev3.RouteConfiguration)
		got := servedRoute(t, s, "s")
		if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
			t.Errorf("%s: served route configuration (-translated +served):\n%s", step.name, diff)
		}
		if len(got.ProtoReflect().GetUnknown()) != 0 {
			t.Errorf("%s: the served encoding has fields a RouteConfiguration does not know", step.name)
		}
		if len(want.ProtoReflect().GetUnknown()) != 0 {
			t.Errorf("%s: publishing modified the translated route configuration", step.name)
		}
	}
}

// BenchmarkServedRouteConfiguration: the digests and the encoding of a
// route configuration of 3000 virtual hosts in which one changed, as
// Publish and then go-control-plane (once per configuration, for the
// first proxy it goes to) make them: the translated form, encoded whole,
// beside the snapshot's (served: the kept encodings of its virtual hosts,
// copied).
func BenchmarkServedRouteConfiguration(b *testing.B) {
	const n = 3000
	vhosts := make([]*routev3.VirtualHost, n)
	for i := range vhosts {
		vhosts[i] = vhost(fmt.Sprintf("svc-%d.example.com", i))
	}
	d := &digester{}
	r := withConfig(cluster("one"), vhosts...)
	if _, err := d.digests(r); err != nil {
		b.Fatal(err)
	}
	// changed is the configuration with virtual host i%n made anew, in a
	// new list (a published list is never modified).
	changed := func(i int) *xdstranslator.Resources {
		vhosts = slices.Clone(vhosts)
		vhosts[i%n] = vhost(fmt.Sprintf("svc-%d.example.com", i%n))
		return withConfig(&xdstranslator.Resources{}, vhosts...)
	}
	b.Run("translated", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			r := changed(i)
			if _, err := d.digests(r); err != nil {
				b.Fatal(err)
			}
			if _, err := cachev3.MarshalResource(r.Routes[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("served", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			r := changed(i)
			ds, err := d.digests(r)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := cachev3.MarshalResource(servedRoutes(r.Routes, ds[1])[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
