package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ListenerPolicyKind is the kind of ListenerPolicy.
const ListenerPolicyKind = "ListenerPolicy"

// ListenerPolicySpec is how the listeners a ListenerPolicy covers meet
// their clients: the TLS handshake, the PROXY protocol header of a load
// balancer, where the client address comes from, HTTP/1 options, the
// access log and HTTP/3. The limits on what clients may send (timeouts, header
// sizes, HTTP/2 windows) are the class owner's, in GatewayParameters
// spec.edge, not here. docs/traffic-policy.md is the user's guide; a
// policy that cannot be honoured is Accepted=False and its listeners keep
// their defaults.
//
// +kubebuilder:validation:XValidation:rule="has(self.tls) || has(self.proxyProtocol) || has(self.clientIP) || has(self.http1) || has(self.accessLog) || has(self.http3)",message="at least one of tls, proxyProtocol, clientIP, http1, accessLog and http3 is required"
type ListenerPolicySpec struct {
	// TargetRefs are the objects, in the policy's namespace, whose
	// listeners the policy covers (GEP-713): a Gateway or a ListenerSet
	// (sectionName: one listener of it). The most specific policy applies
	// to a listener, as a whole: listener over ListenerSet over Gateway;
	// of two on the same target the older wins and the other is
	// Accepted=False reason Conflicted.
	//
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.group == 'gateway.networking.k8s.io' && r.kind in ['Gateway', 'ListenerSet'])",message="targetRefs must be Gateways or ListenerSets of gateway.networking.k8s.io"
	// +kubebuilder:validation:XValidation:rule="self.all(r1, self.exists_one(r2, r1.group == r2.group && r1.kind == r2.kind && r1.name == r2.name && (has(r1.sectionName) ? has(r2.sectionName) && r1.sectionName == r2.sectionName : !has(r2.sectionName))))",message="targetRefs must be distinct"
	TargetRefs []gwapiv1.LocalPolicyTargetReferenceWithSectionName `json:"targetRefs"`

	// TLS is the handshake of the HTTPS listeners and the TLS listeners
	// in mode Terminate (Envoy DownstreamTlsContext common_tls_context
	// tls_params and alpn_protocols); other listeners ignore it.
	// +optional
	TLS *ListenerTLSSettings `json:"tls,omitempty"`

	// ProxyProtocol reads a PROXY protocol header (v1 or v2, HAProxy's
	// specification) at the start of every connection: the load
	// balancer's record of the client's address, which then is the
	// client address (Envoy listener filter
	// envoy.filters.listener.proxy_protocol). It belongs to the port:
	// every listener of every Gateway on one Envoy port must agree.
	// +optional
	ProxyProtocol *ProxyProtocolSettings `json:"proxyProtocol,omitempty"`

	// ClientIP is where the client address of a request comes from for
	// the HTTP and HTTPS listeners: the address that SecurityPolicy
	// authorization's clientCIDRs and the access log's
	// %DOWNSTREAM_REMOTE_ADDRESS% see, and that X-Forwarded-For carries
	// to the backend. Default: the connection's peer (or the PROXY
	// protocol's source), appended to X-Forwarded-For.
	// +optional
	ClientIP *ClientIPSettings `json:"clientIP,omitempty"`

	// HTTP1 are options of HTTP/1 clients of the HTTP and HTTPS listeners
	// (Envoy HttpConnectionManager http_protocol_options).
	// +optional
	HTTP1 *HTTP1Settings `json:"http1,omitempty"`

	// AccessLog is the access log of the HTTP and HTTPS listeners: one
	// line per request on Envoy's stdout, in Envoy's default format unless
	// set here.
	// +optional
	AccessLog *AccessLogSettings `json:"accessLog,omitempty"`

	// HTTP3 also serves the HTTPS listeners over HTTP/3 (QUIC, RFC 9114):
	// Envoy listens on the same port in UDP with the listener's
	// certificates, routes and filters, and the responses over TCP
	// advertise it (Alt-Svc: h3=":<port>"; ma=86400, RFC 7838), so that
	// a browser switches to QUIC for its next requests. The Gateway's
	// Service gets the UDP port. Only HTTPS listeners: a policy whose
	// targets have none is Accepted=False. It belongs to the port: the
	// HTTPS listeners of one Envoy port must agree, and a UDP listener on
	// the same port takes it. QUIC is TLS 1.3: not with tls.maxVersion
	// 1.2.
	// +optional
	HTTP3 *HTTP3Settings `json:"http3,omitempty"`
}

// HTTP3Settings turn HTTP/3 on (`http3: {}`); it has no options yet.
type HTTP3Settings struct{}

// TLSVersion is a TLS protocol version.
// +kubebuilder:validation:Enum="1.2";"1.3"
type TLSVersion string

// The TLS versions a listener may accept (Envoy TlsParameters TLSv1_2,
// TLSv1_3). Envoy's defaults for a listener are 1.2 to 1.3.
const (
	TLSVersion12 TLSVersion = "1.2"
	TLSVersion13 TLSVersion = "1.3"
)

// ListenerTLSSettings are a terminating listener's TLS parameters.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minVersion) || !has(self.maxVersion) || self.minVersion <= self.maxVersion",message="minVersion must not be above maxVersion"
type ListenerTLSSettings struct {
	// MinVersion is the oldest TLS version accepted; an older client's
	// handshake fails (tls_minimum_protocol_version). Default: 1.2.
	// +optional
	MinVersion *TLSVersion `json:"minVersion,omitempty"`

	// MaxVersion is the newest TLS version offered
	// (tls_maximum_protocol_version). Default: 1.3.
	// +optional
	MaxVersion *TLSVersion `json:"maxVersion,omitempty"`

	// CipherSuites are the TLS 1.2 cipher suites accepted, in preference
	// order, by their OpenSSL names as Envoy reads them (e.g.
	// ECDHE-RSA-AES128-GCM-SHA256); TLS 1.3's are fixed by BoringSSL.
	// Default: Envoy's list. Not with minVersion 1.3.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +optional
	CipherSuites []string `json:"cipherSuites,omitempty"`

	// ALPNProtocols are the application protocols offered, in preference
	// order: h2 and http/1.1. Default: h2 then http/1.1 on HTTPS
	// listeners, none on TLS listeners (a plain TCP stream). An HTTPS
	// listener with only http/1.1 keeps HTTP/2 clients on HTTP/1.1.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:Enum=h2;http/1.1
	// +optional
	ALPNProtocols []string `json:"alpnProtocols,omitempty"`
}

// ProxyProtocolSettings are how a port reads PROXY protocol headers.
type ProxyProtocolSettings struct {
	// Optional also accepts connections without a PROXY protocol header
	// (allow_requests_without_proxy_protocol): their client address is
	// the peer's. Unset, a connection without one is closed. Only for a
	// port that nothing but the load balancer can reach: a client that
	// reaches it directly can claim any address.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// ClientIPSettings name one source of the client address: the
// X-Forwarded-For header's trusted hops, or a header of its own.
//
// +kubebuilder:validation:XValidation:rule="has(self.xffNumTrustedHops) != has(self.customHeader)",message="exactly one of xffNumTrustedHops and customHeader is required"
type ClientIPSettings struct {
	// XFFNumTrustedHops is the number of proxies in front of the Gateway
	// whose X-Forwarded-For entries are trusted: the client address is
	// the entry that many places from the right of the header (Envoy
	// HttpConnectionManager xff_num_trusted_hops; the header still gets
	// the peer's address appended). 0 is the peer itself.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	// +optional
	XFFNumTrustedHops *int32 `json:"xffNumTrustedHops,omitempty"`

	// CustomHeader names a header whose value is the client address, as
	// a CDN sets it (e.g. CF-Connecting-IP). A request whose header is
	// missing or not an IP address keeps the peer's address (Envoy
	// original IP detection extension custom_header). X-Forwarded-For is
	// then passed on as it came, nothing appended.
	// +optional
	CustomHeader *gwapiv1.HTTPHeaderName `json:"customHeader,omitempty"`
}

// HTTP1Settings are options of HTTP/1 connections.
type HTTP1Settings struct {
	// AcceptHTTP10 serves HTTP/1.0 requests (accept_http_10); Envoy
	// answers them 426 Upgrade Required otherwise.
	// +optional
	AcceptHTTP10 bool `json:"acceptHTTP10,omitempty"`

	// DefaultHostForHTTP10 is the Host given to an HTTP/1.0 request that
	// has none (default_host_for_http_10), so that it matches the routes
	// of that hostname. Only with acceptHTTP10.
	// +optional
	DefaultHostForHTTP10 *gwapiv1.PreciseHostname `json:"defaultHostForHTTP10,omitempty"`
}

// AccessLogSettings are the format of a listener's access log, or none.
//
// +kubebuilder:validation:XValidation:rule="[has(self.disabled) && self.disabled, has(self.text), has(self.json)].filter(x, x).size() <= 1",message="at most one of disabled, text and json"
type AccessLogSettings struct {
	// Disabled writes no access log for the listener.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Text is a line in Envoy's format (command operators such as
	// %REQ(:PATH)%, %RESPONSE_CODE%, %DOWNSTREAM_REMOTE_ADDRESS%); a line
	// feed is added when it does not end with one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Text *string `json:"text,omitempty"`

	// JSON writes one JSON object per request: each key's value is a
	// string with Envoy's command operators (a value that is only one
	// operator keeps its type: a number stays a number).
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	JSON map[string]string `json:"json,omitempty"`
}

// ListenerPolicy sets how the listeners of the Gateways and ListenerSets
// it targets meet their clients (docs/traffic-policy.md).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gateway-api;xds-controller,shortName=lpol
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ListenerPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ListenerPolicySpec `json:"spec"`
	// Status is one entry per Gateway the policy reaches (GEP-713
	// PolicyAncestorStatus): Accepted.
	// +optional
	Status gwapiv1.PolicyStatus `json:"status,omitempty"`
}

// ListenerPolicyList is a list of ListenerPolicies.
//
// +kubebuilder:object:root=true
type ListenerPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ListenerPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ListenerPolicy{}, &ListenerPolicyList{})
}
