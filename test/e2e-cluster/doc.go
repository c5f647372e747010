// Package e2ecluster is the end-to-end test of xds-controller on the local
// cluster (hack/cluster): it installs the chart from the repository with
// Helm's Go packages (there is no helm binary), applies
// examples/ with kubectl, and sends HTTP through the Gateways'
// LoadBalancer addresses, in Shared and in Dedicated mode. It is its own Go
// module so that Helm's dependencies stay out of the controller's module,
// and `go test ./...` at the repository root skips it. Run it with
// `make e2e`; it skips when the cluster's kubeconfig is missing.
package e2ecluster
