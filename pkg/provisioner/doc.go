// Package provisioner connects the controller (pkg/provider/kubernetes) to
// the Envoy fleet rendering and applying of pkg/infra. It is the glue and
// nothing else: every decision about names, parameters, ports and objects
// is pkg/infra's; when to run is the controller's.
//
// Install puts three things into the controller's Config (kubernetes.Hooks):
//
//   - Resolve (resolve.go), once per snapshot, before translation: reads the
//     GatewayParameters that our GatewayClasses (spec.parametersRef) and
//     their Gateways (spec.infrastructure.parametersRef) reference,
//     refuses bad references (the translator turns them into
//     Accepted=False reason InvalidParameters), computes each Gateway's
//     effective parameters and mode (infra.Effective) and assigns the bind
//     ports (infra.AssignBindPorts, keeping the ports in force on the live
//     Services). The translation takes the scopes and bind ports from it,
//     the provisioner everything else: both see the same answers.
//   - Provisioner (provisioner.go, plan.go), on the leader after each
//     translation and whenever an Envoy pod of the controller's namespace
//     changes: makePlan decides (pure) which shared fleets, Gateway
//     Services, EndpointSlices and dedicated fleets to sync and what to
//     delete; Provision renders them (infra.Renderer) and applies them
//     (infra.Applier: server-side apply, unchanged objects skipped, the lead
//     checked right before every write).
//   - The watches: GatewayParameters (they change the translation), and the
//     Envoy pods of the controller's namespace (cache restricted to that
//     namespace and app.kubernetes.io/name=envoy; they only change the
//     shared-mode EndpointSlices, so they re-run the provisioner alone).
//
// The fleets hold no certificate Secret: their pods get SVIDs from the
// controller's identity service (docs/identity.md), so the provisioner
// writes no Secret anywhere.
package provisioner
