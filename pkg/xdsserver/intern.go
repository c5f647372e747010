package xdsserver

import (
	"unique"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// internRequest replaces, in place, the resource names a delta request
// subscribes to and the names and versions of its
// initial_resource_versions with canonical copies (unique.Make), before
// go-control-plane's delta server keeps them in the stream's subscription
// (its subscribed names, and its returned resources until the first
// response replaces them). A thousand proxies subscribe to the same
// names: each name's bytes are then held once, not once per stream and
// request. It returns req.
func internRequest(req *discoveryv3.DeltaDiscoveryRequest) *discoveryv3.DeltaDiscoveryRequest {
	for i, name := range req.ResourceNamesSubscribe {
		req.ResourceNamesSubscribe[i] = unique.Make(name).Value()
	}
	if len(req.InitialResourceVersions) > 0 {
		versions := make(map[string]string, len(req.InitialResourceVersions))
		for name, version := range req.InitialResourceVersions {
			versions[unique.Make(name).Value()] = unique.Make(version).Value()
		}
		req.InitialResourceVersions = versions
	}
	return req
}
