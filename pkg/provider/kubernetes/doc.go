// Package kubernetes is the controller mode of xds-controller: a
// controller-runtime manager that watches the Gateway API objects and what
// they reference, turns its caches into a resources.Resources snapshot,
// translates it with the same pure pipeline as standalone mode
// (translate.Run), publishes the xDS output of every proxy scope whose
// output changed, hands the desired status to pkg/status, and the desired
// infrastructure to the provisioner hook (Hooks; pkg/provisioner installs
// it on top of pkg/infra).
//
// # Pipeline
//
// Every watch event (after filtering: a status-only change of one of our
// objects only asks the status writer to re-check that object, which puts
// back our status if someone else changed it; a Secret or ConfigMap event
// counts only when one of our Gateways references it; a Namespace event
// only when its labels change) kicks the pipeline: the first event after a
// quiet period (no run within Debounce) runs it at once, a lone event
// right after a run when Debounce has passed since that run; two or more
// events are a burst, coalesced until Debounce passes without one, and run
// at least every MaxDebounce while they keep coming (runAt). Every
// event of a translated kind is also recorded in the object index
// (objectIndex, index.go), which keeps each kind sorted; one run takes the
// index's snapshot (what changed since the last run, the rest being the
// very objects of the last snapshot), translates what changed
// (translate.Cache), publishes changed scopes to the xDS server and removes scopes
// that vanished, then updates the status writer and the provisioner. A
// failed translation is logged and changes nothing that is served: the last
// good configuration stays published.
//
// The Hooks' Resolve runs before each translation (the scopes, bind ports
// and refused parametersRefs come from it, so the translation and the
// provisioner see the same answers); the types of Hooks.InfraWatches (the
// Envoy pods) re-run only the provisioner, with the last translation.
//
// # Caches
//
// Gateway API objects are cached in full, without managedFields. Services
// and EndpointSlices (only those labelled kubernetes.io/service-name) are
// informers of whole objects too (an endpoint change reaches Envoy without
// a read of its own), each slimmed to the fields the translation, the
// Gateway addresses and the provisioner read (services.go: no selector, IP
// families, target Pods, nodes or zones).
// Secrets and ConfigMaps are watched as metadata only (PartialObjectMetadata
// with labels and annotations dropped), Secrets only of type
// kubernetes.io/tls (a field selector: the only type the translation
// accepts, so the data of a ServiceAccount token or an Opaque Secret is
// never fetched, even when a Gateway names one; it reads as missing), so a
// cluster with 30,000 Secrets costs a few MB, not the Secrets' data: the
// Secrets that our Gateways' listeners reference are read with an uncached
// GET, and kept in a small map
// keyed by namespace/name and refreshed only when the metadata cache shows a
// newer resourceVersion. The manager's client never caches Secrets or
// ConfigMaps (a typed Get goes to the API server), so no other code path
// can start a full Secret informer by accident. Namespaces are watched as
// metadata too (only their labels matter).
//
// With Config.WatchNamespaces every namespaced kind is watched in those
// namespaces only (cache.Options.DefaultNamespaces; cluster-scoped kinds
// stay cluster-wide), so the controller needs Roles there and nothing
// namespaced cluster-wide: objects elsewhere are never seen, and a
// reference into another namespace resolves as missing (the referenced
// Secrets and ConfigMaps are filtered before they are read).
//
// # Leader election, and why every replica serves xDS
//
// Every replica watches, translates and serves xDS on its own: the
// translation is a pure function of the watched objects, so all replicas
// publish the same snapshots (the version is a content hash, identical
// across replicas and restarts). Envoy may therefore connect to any replica
// behind the xDS Service, an Envoy never depends on which replica leads, and
// a leader change or a replica restart does not disconnect or reconfigure
// any proxy: xDS capacity scales with replicas, and losing the leader costs
// no data-plane availability. The alternative (only the leader serves)
// would make every leader change a reconnect storm for the whole fleet and
// leave Envoys without a control plane until the new leader's caches sync.
//
// Only writes to the API server are the leader's: status (pkg/status) and
// infrastructure (the provisioner). The leader is elected with
// controller-runtime's leader election on the Lease "xds-controller.dev" in
// the controller's namespace. The lock is wrapped (leaseGuard) so that we
// know when our last successful renewal started: Leading() is true only
// while the leader runnable runs and that renewal is younger than the renew
// deadline, and it is checked right before every single write. A replica
// that loses the lead stops writing at once, even before controller-runtime
// notices and exits the process. When a replica becomes leader, the status
// writer re-checks every object and the provisioner runs.
//
// Programmed depends on what every replica's proxies ACKed, so each
// replica publishes its proxies' state (peers.go: a ConfigMap
// xds-controller-dataplane-<replica>, the only write a follower makes) and
// reads the others'.
package kubernetes
