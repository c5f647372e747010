// Package conformance runs the upstream Gateway API conformance suite
// (sigs.k8s.io/gateway-api/conformance) against xds-controller on the
// cluster in KUBECONFIG, once per deployment mode, and writes the report
// that upstream's conformance/reports folder asks for. It is its own Go
// module so that the suite's dependencies (testify, miekg/dns, Helm for
// the optional chart install) stay out of the controller's module.
//
// `make conformance MODE=shared|dedicated` (hack/conformance.mk) is the
// way in; README.md says how to run it on any cluster.
package conformance
