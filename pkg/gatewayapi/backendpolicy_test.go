package gatewayapi

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/xds-controller/xds-controller/api/v1alpha1"
	"github.com/xds-controller/xds-controller/pkg/ir"
)

// backendPolicyOf is BackendPolicy "bp" on Service web with spec's fields.
func backendPolicyOf(spec v1alpha1.BackendPolicySpec) *v1alpha1.BackendPolicy {
	if spec.TargetRefs == nil {
		spec.TargetRefs = []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
			Kind: "Service", Name: "web"}}}
	}
	return &v1alpha1.BackendPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bp"}, Spec: spec}
}

func dur(s string) *gwapiv1.Duration { d := gwapiv1.Duration(s); return &d }

func irDur(d time.Duration) ir.Duration { return ir.Duration{Duration: d} }

// TestBackendPolicyValidation is the validation table of BackendPolicy:
// a valid spec gives its effect, the defaults filled in; an invalid one
// is Accepted=False reason Invalid, with every problem in the message,
// and has no effect.
func TestBackendPolicyValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec v1alpha1.BackendPolicySpec
		want *ir.BackendPolicy
		// bad are parts of the Invalid message, one per problem.
		bad []string
	}{
		{
			name: "active HTTP probe defaults",
			spec: v1alpha1.BackendPolicySpec{HealthCheck: &v1alpha1.HealthCheck{Active: &v1alpha1.ActiveHealthCheck{
				Type: v1alpha1.ActiveHealthCheckHTTP, HTTP: &v1alpha1.HTTPHealthCheck{Path: "/healthz"}}}},
			want: &ir.BackendPolicy{HealthCheck: &ir.HealthCheck{Type: ir.HealthCheckHTTP, Interval: irDur(5 * time.Second), Timeout: irDur(time.Second),
				UnhealthyThreshold: 3, HealthyThreshold: 1, Path: "/healthz", ExpectedStatuses: []uint32{200}}},
		},
		{
			name: "passive defaults",
			spec: v1alpha1.BackendPolicySpec{HealthCheck: &v1alpha1.HealthCheck{Passive: &v1alpha1.PassiveHealthCheck{}}},
			want: &ir.BackendPolicy{Outlier: &ir.OutlierDetection{Consecutive5xx: 5, Interval: irDur(10 * time.Second), BaseEjectionTime: irDur(30 * time.Second), MaxEjectionPercent: 10}},
		},
		{
			name: "circuit breaker with max retries 0",
			spec: v1alpha1.BackendPolicySpec{CircuitBreaker: &v1alpha1.CircuitBreaker{MaxPendingRequests: ptr(int32(1)), MaxRetries: ptr(int32(0))}},
			want: &ir.BackendPolicy{CircuitBreaker: &ir.CircuitBreaker{MaxPendingRequests: 1, MaxRetries: ptr(uint32(0))}},
		},
		{
			name: "ring hash on a header, its name in lower case",
			spec: v1alpha1.BackendPolicySpec{LoadBalancer: &v1alpha1.LoadBalancer{Type: v1alpha1.LoadBalancerRingHash,
				HashKey: &v1alpha1.HashKey{Type: v1alpha1.HashKeyHeader, Header: &v1alpha1.HashHeader{Name: "X-User"}}}},
			want: &ir.BackendPolicy{LoadBalancer: &ir.LoadBalancer{Type: ir.LoadBalancerRingHash}, Hash: &ir.HashKey{Type: ir.HashHeader, Name: "x-user"}},
		},
		{
			name: "slow start defaults",
			spec: v1alpha1.BackendPolicySpec{LoadBalancer: &v1alpha1.LoadBalancer{Type: v1alpha1.LoadBalancerLeastRequest,
				SlowStart: &v1alpha1.SlowStart{Window: "30s", Aggression: ptr("2.5")}}},
			want: &ir.BackendPolicy{LoadBalancer: &ir.LoadBalancer{Type: ir.LoadBalancerLeastRequest,
				SlowStart: &ir.SlowStart{Window: irDur(30 * time.Second), Aggression: 2.5, MinWeightPercent: 10}}},
		},
		{
			name: "keep-alive in seconds, PROXY v2",
			spec: v1alpha1.BackendPolicySpec{
				Connection:    &v1alpha1.BackendConnection{TCPKeepalive: &v1alpha1.TCPKeepalive{IdleTime: dur("2m"), Interval: dur("10s")}},
				ProxyProtocol: &v1alpha1.BackendProxyProtocol{Version: v1alpha1.ProxyProtocolV2},
			},
			want: &ir.BackendPolicy{TCPKeepalive: &ir.TCPKeepalive{IdleTimeSeconds: 120, IntervalSeconds: 10}, ProxyProtocol: 2},
		},
		{
			name: "nothing set",
			spec: v1alpha1.BackendPolicySpec{},
			bad:  []string{"at least one of healthCheck"},
		},
		{
			name: "empty healthCheck",
			spec: v1alpha1.BackendPolicySpec{HealthCheck: &v1alpha1.HealthCheck{}},
			bad:  []string{"healthCheck: at least one of active and passive"},
		},
		{
			name: "target of another kind",
			spec: v1alpha1.BackendPolicySpec{
				TargetRefs: []gwapiv1.LocalPolicyTargetReferenceWithSectionName{{LocalPolicyTargetReference: gwapiv1.LocalPolicyTargetReference{
					Group: gwapiv1.GroupName, Kind: "HTTPRoute", Name: "web"}}},
				LoadBalancer: &v1alpha1.LoadBalancer{Type: v1alpha1.LoadBalancerRandom},
			},
			bad: []string{"targetRefs[0]: gateway.networking.k8s.io/HTTPRoute is not a core Service"},
		},
		{
			name: "probe out of bounds",
			spec: v1alpha1.BackendPolicySpec{HealthCheck: &v1alpha1.HealthCheck{Active: &v1alpha1.ActiveHealthCheck{
				Type: v1alpha1.ActiveHealthCheckGRPC, Interval: dur("2h"), Timeout: dur("5ms"), HealthyThreshold: ptr(int32(0)),
				HTTP: &v1alpha1.HTTPHealthCheck{Path: "/x?y", ExpectedStatuses: []int32{99}}}}},
			bad: []string{"interval 2h is not between 100ms and 1h", "timeout 5ms is not between 10ms and 1h", "healthyThreshold 0 is not between 1 and 1000",
				"http is required with type HTTP, and only then", `http.path "/x?y" is not an absolute path`, "expectedStatuses: 99 is not between 100 and 599"},
		},
		{
			name: "not a duration",
			spec: v1alpha1.BackendPolicySpec{Connection: &v1alpha1.BackendConnection{ConnectTimeout: dur("1 second")}},
			bad:  []string{`connection.connectTimeout "1 second" is not a Gateway API duration`},
		},
		{
			name: "hash key rules",
			spec: v1alpha1.BackendPolicySpec{LoadBalancer: &v1alpha1.LoadBalancer{Type: v1alpha1.LoadBalancerMaglev,
				HashKey:   &v1alpha1.HashKey{Type: v1alpha1.HashKeyCookie, Header: &v1alpha1.HashHeader{Name: "x"}, Cookie: &v1alpha1.HashCookie{Name: "bad name", TTL: dur("0s"), Path: ptr("nope")}},
				SlowStart: &v1alpha1.SlowStart{Window: "10s"}}},
			bad: []string{"slowStart is allowed with RoundRobin and LeastRequest only", "hashKey.header is required with type Header, and only then",
				`hashKey.cookie.name "bad name"`, "hashKey.cookie.ttl 0s is not between 1s and 8760h", `hashKey.cookie.path "nope" does not start with "/"`},
		},
		{
			name: "counts and keep-alive",
			spec: v1alpha1.BackendPolicySpec{
				CircuitBreaker: &v1alpha1.CircuitBreaker{MaxConnections: ptr(int32(0)), MaxRetries: ptr(int32(-1))},
				Connection:     &v1alpha1.BackendConnection{BufferLimitBytes: ptr(int32(100)), TCPKeepalive: &v1alpha1.TCPKeepalive{Probes: ptr(int32(0)), Interval: dur("1500ms")}},
			},
			bad: []string{"circuitBreaker.maxConnections 0 is not between 1 and 1000000", "circuitBreaker.maxRetries -1 is not between 0 and 1000000",
				"connection.bufferLimitBytes 100 is not between 1024 and 16777216", "connection.tcpKeepalive.probes 0 is not between 1 and 100",
				"connection.tcpKeepalive.interval 1500ms is not a whole number of seconds"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &policyState{}
			backendPolicy(backendPolicyOf(tc.spec), st)
			if len(tc.bad) == 0 {
				if st.notAccepted != nil {
					t.Fatalf("not accepted: %s", st.notAccepted.msg)
				}
				if got, _ := st.effect.(*ir.BackendPolicy); !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("effect %+v, want %+v", got, tc.want)
				}
				return
			}
			if st.notAccepted == nil || st.notAccepted.reason != string(gwapiv1.PolicyReasonInvalid) {
				t.Fatalf("got %+v, want Invalid", st.notAccepted)
			}
			if st.effect != nil {
				t.Errorf("an invalid policy has an effect: %+v", st.effect)
			}
			if n := len(strings.Split(st.notAccepted.msg, "; ")); n != len(tc.bad) {
				t.Errorf("%d problems, want %d: %s", n, len(tc.bad), st.notAccepted.msg)
			}
			for _, b := range tc.bad {
				if !strings.Contains(st.notAccepted.msg, b) {
					t.Errorf("message %q lacks %q", st.notAccepted.msg, b)
				}
			}
		})
	}
}
