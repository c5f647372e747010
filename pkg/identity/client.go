package identity

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
)

// Client asks the identity service for SVIDs.
type Client struct {
	// URL is https://<host>:<port>; Path is appended.
	URL  string
	HTTP *http.Client
	// Trust is the live bundle that authenticates the service (read at
	// every handshake); SetX509Authorities on it changes whom the Client
	// trusts (pkg/agent does with every bundle it receives).
	Trust *x509bundle.Bundle
}

// NewClient returns a Client for the service at address (host:port) that
// authenticates the service by SPIFFE rules: its certificate must chain
// to one of authorities (the trust bundle, then Client.Trust) and carry
// serverID. Host names are not checked; the SPIFFE ID is the server's
// identity.
func NewClient(address string, serverID spiffeid.ID, authorities []*x509.Certificate) *Client {
	bundle := x509bundle.FromX509Authorities(serverID.TrustDomain(), authorities)
	tlsConf := tlsconfig.TLSClientConfig(bundle, tlsconfig.AuthorizeID(serverID))
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &Client{
		URL:   "https://" + address,
		Trust: bundle,
		HTTP: &http.Client{
			Timeout: 15 * time.Second,
			Transport: &http.Transport{
				Proxy:               nil,
				DialContext:         dialer.DialContext,
				TLSClientConfig:     tlsConf,
				TLSHandshakeTimeout: 5 * time.Second,
				ForceAttemptHTTP2:   true,
			},
		},
	}
}

// RefusedError is the service's answer to a refused request.
type RefusedError struct {
	// StatusCode is the HTTP status: 400, 401, 403, 5xx.
	StatusCode int
	// Message is the service's reason.
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("identity service refused (%d %s): %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Sign sends csrPEM with token and returns the service's answer. A refusal
// is a *RefusedError; transport problems are returned as they are.
func (c *Client) Sign(ctx context.Context, token string, csrPEM []byte) (*SignResponse, error) {
	body, err := json.Marshal(SignRequest{CSR: string(csrPEM)})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = string(bytes.TrimSpace(data))
		}
		return nil, &RefusedError{StatusCode: resp.StatusCode, Message: e.Error}
	}
	var out SignResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("identity service answer: %w", err)
	}
	if out.CertChain == "" || out.Bundle == "" {
		return nil, errors.New("identity service answer without certificate or bundle")
	}
	return &out, nil
}

func parseDER(der []byte) (*x509.Certificate, error) {
	return x509.ParseCertificate(der)
}
