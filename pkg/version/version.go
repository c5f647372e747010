// Package version holds xds-controller's version: the one source that
// `xds-controller version` prints and that the conformance reports name.
package version

import "runtime/debug"

// Path is this package's import path, for -ldflags "-X Path.version=...".
const Path = "github.com/xds-controller/xds-controller/pkg/version"

// version is set at build time: -ldflags "-X <Path>.version=v1.2.3" (the
// Makefile passes $(VERSION), `git describe --tags --always --dirty`).
var version = ""

// Get returns the version set at build time; else the main module's
// version from the build information (a `go install ...@vX` build); else
// "dev".
func Get() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
