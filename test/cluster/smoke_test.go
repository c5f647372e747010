package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// Addresses the test may send traffic to: the cluster's Service range and
// its bridge (pods and the LoadBalancer pool). Anything else is refused.
func allowedPrefixes(t *testing.T) []netip.Prefix {
	v := envOr("XDS_CLUSTER_ALLOWED_CIDRS", "10.96.0.0/16,10.244.0.0/16")
	var out []netip.Prefix
	for _, s := range strings.Split(v, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("XDS_CLUSTER_ALLOWED_CIDRS: %v", err)
		}
		out = append(out, p)
	}
	return out
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// httpClient opens a new connection for every request (so kube-proxy picks a
// backend each time) and never uses a proxy from the environment.
var httpClient = &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

type env struct {
	t       *testing.T
	ctx     context.Context
	cs      kubernetes.Interface
	ns      string
	allowed []netip.Prefix
}

func TestSmoke(t *testing.T) {
	kc := os.Getenv("KUBECONFIG")
	if kc == "" {
		t.Skip("KUBECONFIG is not set: bring the cluster up with hack/cluster/cluster up")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	e := &env{t: t, ctx: ctx, cs: kubernetes.NewForConfigOrDie(cfg), allowed: allowedPrefixes(t)}
	echoImage := envOr("ECHO_IMAGE", "registry.k8s.io/gateway-api/echo-basic:v1.5.1")
	clientImage := envOr("HTTPGET_IMAGE", "xds-controller.local/cluster/httpget:v1")

	step(t, "create a namespace", func() error {
		ns, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "smoke-"}}, metav1.CreateOptions{})
		if err == nil {
			e.ns = ns.Name
			t.Logf("  namespace %s", e.ns)
		}
		return err
	})
	deleted := false
	defer func() {
		if !deleted {
			_ = e.cs.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
		}
	}()

	step(t, "ServiceAccount token (TokenRequest, custom audience) passes TokenReview", func() error {
		var tok *authnv1.TokenRequest
		err := e.poll(30*time.Second, func() (bool, error) {
			var err error
			tok, err = e.cs.CoreV1().ServiceAccounts(e.ns).CreateToken(ctx, "default", &authnv1.TokenRequest{
				Spec: authnv1.TokenRequestSpec{Audiences: []string{"xds-smoke"}, ExpirationSeconds: ptr.To[int64](600)},
			}, metav1.CreateOptions{})
			return err == nil, nil // the default ServiceAccount appears shortly after the namespace
		})
		if err != nil {
			return fmt.Errorf("TokenRequest: %w", err)
		}
		rev, err := e.cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
			Spec: authnv1.TokenReviewSpec{Token: tok.Status.Token, Audiences: []string{"xds-smoke"}},
		}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		want := "system:serviceaccount:" + e.ns + ":default"
		if !rev.Status.Authenticated || rev.Status.User.Username != want {
			return fmt.Errorf("TokenReview: authenticated=%v user=%q error=%q", rev.Status.Authenticated, rev.Status.User.Username, rev.Status.Error)
		}
		return nil
	})

	step(t, "echo Deployment with 2 replicas becomes Ready", func() error {
		if _, err := e.cs.AppsV1().Deployments(e.ns).Create(ctx, echoDeployment(echoImage), metav1.CreateOptions{}); err != nil {
			return err
		}
		return e.poll(3*time.Minute, func() (bool, error) {
			d, err := e.cs.AppsV1().Deployments(e.ns).Get(ctx, "echo", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return d.Status.ReadyReplicas == 2 && d.Status.AvailableReplicas == 2, nil
		})
	})

	var clusterIP string
	step(t, "ClusterIP Service answers from the host, from both replicas", func() error {
		svc, err := e.cs.CoreV1().Services(e.ns).Create(ctx, echoService("echo", corev1.ServiceTypeClusterIP), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		clusterIP = svc.Spec.ClusterIP
		pods := map[string]bool{}
		return e.poll(90*time.Second, func() (bool, error) {
			pod, err := e.get("http://" + net.JoinHostPort(clusterIP, "80") + "/smoke")
			if err != nil {
				t.Logf("  GET %s: %v (retrying)", clusterIP, err)
				return false, nil
			}
			pods[pod] = true
			return len(pods) == 2, nil
		})
	})

	step(t, "a pod reaches the Service by name (cluster DNS), and its logs are readable", func() error {
		url := fmt.Sprintf("http://echo.%s.svc.cluster.local/from-pod", e.ns)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "client"},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "httpget", Image: clientImage, ImagePullPolicy: corev1.PullIfNotPresent,
					Args: []string{"-url", url, "-timeout", "60s"},
				}},
			},
		}
		if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return err
		}
		var phase corev1.PodPhase
		err := e.poll(2*time.Minute, func() (bool, error) {
			p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, "client", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			phase = p.Status.Phase
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		logs, lerr := e.cs.CoreV1().Pods(e.ns).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
		t.Logf("  client pod %s, logs:\n%s", phase, indent(string(logs)))
		if err != nil {
			return err
		}
		if lerr != nil {
			return fmt.Errorf("reading logs: %w", lerr)
		}
		if phase != corev1.PodSucceeded {
			return fmt.Errorf("client pod %s", phase)
		}
		if !strings.Contains(string(logs), "/from-pod") {
			return fmt.Errorf("logs lack the echoed path")
		}
		return nil
	})

	step(t, "LoadBalancer Service gets an address that answers from the host", func() error {
		if _, err := e.cs.CoreV1().Services(e.ns).Create(ctx, echoService("echo-lb", corev1.ServiceTypeLoadBalancer), metav1.CreateOptions{}); err != nil {
			return err
		}
		var ip string
		if err := e.poll(time.Minute, func() (bool, error) {
			s, err := e.cs.CoreV1().Services(e.ns).Get(ctx, "echo-lb", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if in := s.Status.LoadBalancer.Ingress; len(in) > 0 && in[0].IP != "" {
				ip = in[0].IP
				return true, nil
			}
			return false, nil
		}); err != nil {
			return fmt.Errorf("no address assigned: %w", err)
		}
		t.Logf("  LoadBalancer address %s", ip)
		return e.poll(90*time.Second, func() (bool, error) {
			pod, err := e.get("http://" + net.JoinHostPort(ip, "80") + "/lb")
			if err != nil {
				t.Logf("  GET %s: %v (retrying)", ip, err)
				return false, nil
			}
			t.Logf("  answered by %s", pod)
			return true, nil
		})
	})

	step(t, "deleting the namespace finishes", func() error {
		if err := e.cs.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{}); err != nil {
			return err
		}
		deleted = true
		return e.poll(3*time.Minute, func() (bool, error) {
			_, err := e.cs.CoreV1().Namespaces().Get(ctx, e.ns, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, nil
		})
	})
}

func step(t *testing.T, name string, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("FAIL %s after %s: %v", name, time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("ok   %s (%s)", name, time.Since(start).Round(time.Millisecond))
}

func (e *env) poll(timeout time.Duration, cond func() (bool, error)) error {
	return wait.PollUntilContextTimeout(e.ctx, time.Second, timeout, true, func(context.Context) (bool, error) { return cond() })
}

// get fetches url from the host, after checking that its address is one of
// the cluster's own, and returns the answering pod's name.
func (e *env) get(url string) (string, error) {
	host := strings.TrimPrefix(url, "http://")
	host = host[:strings.IndexByte(host, '/')]
	h, _, _ := net.SplitHostPort(host)
	ip, err := netip.ParseAddr(h)
	if err != nil {
		return "", err
	}
	ok := false
	for _, p := range e.allowed {
		ok = ok || p.Contains(ip)
	}
	if !ok {
		e.t.Fatalf("refusing to send traffic to %s: not in the cluster's ranges %v", ip, e.allowed)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	var echo struct {
		Pod       string `json:"pod"`
		Namespace string `json:"namespace"`
		Path      string `json:"path"`
	}
	if err := json.Unmarshal(body, &echo); err != nil {
		return "", fmt.Errorf("echo answer is not JSON: %v: %s", err, body)
	}
	if echo.Namespace != e.ns || echo.Pod == "" {
		return "", fmt.Errorf("unexpected echo answer: %s", body)
	}
	return echo.Pod, nil
}

func echoDeployment(image string) *appsv1.Deployment {
	labels := map[string]string{"app": "echo"}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](2),
					Containers: []corev1.Container{{
						Name: "echo", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Env:   []corev1.EnvVar{fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NAMESPACE", "metadata.namespace")},
						Ports: []corev1.ContainerPort{{ContainerPort: 3000}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(3000)}},
							PeriodSeconds: 2,
						},
					}},
				},
			},
		},
	}
}

func echoService(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": "echo"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(3000)}},
		},
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}
