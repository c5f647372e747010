//go:build tools

// Package tools pins the main package this module builds.
package tools

import _ "sigs.k8s.io/gateway-api/conformance/echo-basic"
