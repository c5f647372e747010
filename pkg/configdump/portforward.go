package configdump

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// maxDump bounds the body of /config_dump read, in bytes.
const maxDump = 256 << 20

// Fetch GETs path from port of pod namespace/name through the API
// server's port-forward (pods/portforward, SPDY, as `kubectl
// port-forward` does): the connection reaches 127.0.0.1:port inside the
// pod, where Envoy's admin listens (infra.AdminPort). It returns the
// body. Errors: the port-forward (RBAC: create on pods/portforward in the
// pod's namespace), the request, or a status other than 200.
func Fetch(ctx context.Context, rc *rest.Config, namespace, name string, port int, path string) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	transport, upgrader, err := spdy.RoundTripperFor(rc)
	if err != nil {
		return nil, err
	}
	url := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	var errOut strings.Builder
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, &errOut)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer close(stop)
	select {
	case <-ready:
	case err := <-done:
		return nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, name, errors.Join(err, errors.New(strings.TrimSpace(errOut.String()))))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		return nil, fmt.Errorf("port-forward to pod %s/%s: no local port (%v)", namespace, name, err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", ports[0].Local, path), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s from pod %s/%s: %w %s", path, namespace, name, err, strings.TrimSpace(errOut.String()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDump))
	if err != nil {
		return nil, fmt.Errorf("GET %s from pod %s/%s: %w", path, namespace, name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s from pod %s/%s: %s: %s", path, namespace, name, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}
