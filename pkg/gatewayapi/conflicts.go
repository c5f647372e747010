package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/pkg/ir"
)

// markDuplicateNames keeps the first listener of each name; later ones are
// dropped (the API server refuses them; the file provider does not).
func markDuplicateNames(ls []*listenerState) {
	seen := map[string]bool{}
	for _, l := range ls {
		if seen[l.name] {
			l.duplicate = true
		}
		seen[l.name] = true
	}
}

// portClass groups protocols that can share a port: HTTP with HTTP, HTTPS
// and TLS with each other (told apart by SNI), TCP alone, UDP alone (UDP
// ports are a separate space from the TCP-based ones).
func portClass(p ir.Protocol) string {
	switch p {
	case ir.ProtocolHTTP:
		return "http"
	case ir.ProtocolHTTPS, ir.ProtocolTLS:
		return "tls"
	case ir.ProtocolUDP:
		return "udp"
	default:
		return "tcp"
	}
}

// detectConflicts applies the Gateway spec's "Distinct Listeners" rules
// (Gateway spec.listeners) to the listeners of one Gateway that have a
// supported protocol:
//   - listeners on one port whose protocols cannot share it (HTTP with
//     HTTPS, say) are all Conflicted with reason ProtocolConflict;
//   - listeners on one port with compatible protocols and the same
//     hostname are all Conflicted with reason HostnameConflict.
//
// No conflicting listener wins: all of them are refused (spec: "ALL
// indistinct Listeners must not be accepted").
func detectConflicts(ls []*listenerState) {
	byPort := map[gwapiv1.PortNumber][]*listenerState{}
	var ports []gwapiv1.PortNumber
	for _, l := range ls {
		if l.duplicate {
			continue
		}
		if _, ok := protocolKinds[l.spec.Protocol]; !ok {
			continue
		}
		if _, ok := byPort[l.spec.Port]; !ok {
			ports = append(ports, l.spec.Port)
		}
		byPort[l.spec.Port] = append(byPort[l.spec.Port], l)
	}
	slices.Sort(ports)
	for _, port := range ports {
		group := byPort[port]
		classes := map[string][]string{}
		for _, l := range group {
			if c := portClass(l.protocol); c != "udp" {
				classes[c] = append(classes[c], string(l.protocol))
			}
		}
		if len(classes) > 1 {
			var protos []string
			for _, l := range group {
				if !slices.Contains(protos, string(l.protocol)) {
					protos = append(protos, string(l.protocol))
				}
			}
			for _, l := range group {
				if portClass(l.protocol) != "udp" {
					l.conflict = &problem{string(gwapiv1.ListenerReasonProtocolConflict),
						fmt.Sprintf("port %d is used by listeners of incompatible protocols (%s)", port, strings.Join(protos, ", "))}
				}
			}
			continue
		}
		for i, a := range group {
			for j, b := range group {
				if i != j && portClass(a.protocol) == portClass(b.protocol) && a.hostname == b.hostname {
					host := a.hostname
					if host == "" {
						host = "(any)"
					}
					a.conflict = &problem{string(gwapiv1.ListenerReasonHostnameConflict),
						fmt.Sprintf("listeners %s and %s on port %d have the same hostname %s", a.name, b.name, port, host)}
					break
				}
			}
		}
	}
}

// detectOverlappingTLS sets OverlappingTLSConfig on HTTPS listeners that
// share a port with another HTTPS listener whose hostname overlaps theirs
// (*.example.com and foo.example.com), as the spec requires controllers to
// detect. The listeners stay accepted.
func detectOverlappingTLS(ls []*listenerState) {
	for _, a := range ls {
		for _, b := range ls {
			if a == b || a.duplicate || b.duplicate || a.conflict != nil || b.conflict != nil ||
				a.protocol != ir.ProtocolHTTPS || b.protocol != ir.ProtocolHTTPS || a.spec.Port != b.spec.Port {
				continue
			}
			if a.hostname != "" && b.hostname != "" && a.hostname != b.hostname && intersectHostname(a.hostname, b.hostname) != "" {
				a.overlappingTLS = true
			}
		}
	}
}
