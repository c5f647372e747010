package identity

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/xds-controller/xds-controller/pkg/pki"
)

// Path is the identity service's only endpoint: POST a SignRequest with
// the token in "Authorization: Bearer <token>"; the answer is a
// SignResponse (200) or an ErrorResponse (400 bad CSR, 401 bad token,
// 403 not a fleet's ServiceAccount, 429 too many requests from the client,
// with Retry-After, 5xx the service's own trouble).
const Path = "/v1/svid"

// maxBody bounds a request body (a CSR is well under 8 KiB).
const maxBody = 64 << 10

// SignRequest is the body of a request.
type SignRequest struct {
	// CSR is a PEM "CERTIFICATE REQUEST" (CheckCSR).
	CSR string `json:"csr"`
}

// SignResponse is the body of a successful answer.
type SignResponse struct {
	// SPIFFEID is the SVID's identity.
	SPIFFEID string `json:"spiffeID"`
	// CertChain is the SVID, PEM: the leaf certificate (our CA signs it
	// directly).
	CertChain string `json:"certChain"`
	// Bundle is the trust bundle of the trust domain, PEM: the CA
	// certificates that sign SVIDs, the controller's included.
	Bundle string `json:"bundle"`
	// ExpiresAt is the SVID's NotAfter.
	ExpiresAt time.Time `json:"expiresAt"`
}

// ErrorResponse is the body of a refusal.
type ErrorResponse struct {
	Error string `json:"error"`
}

// Reviewer reviews a token for audiences: a Kubernetes TokenReview.
type Reviewer interface {
	Review(ctx context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error)
}

// ReviewerFunc adapts a function to Reviewer.
type ReviewerFunc func(ctx context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error)

// Review calls f.
func (f ReviewerFunc) Review(ctx context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error) {
	return f(ctx, token, audiences)
}

// TokenReviewer reviews tokens with the API server's TokenReview API (the
// caller needs RBAC create on authentication.k8s.io tokenreviews).
func TokenReviewer(c authv1client.TokenReviewsGetter) Reviewer {
	return ReviewerFunc(func(ctx context.Context, token string, audiences []string) (authv1.TokenReviewStatus, error) {
		tr, err := c.TokenReviews().Create(ctx, &authv1.TokenReview{
			Spec: authv1.TokenReviewSpec{Token: token, Audiences: audiences},
		}, metav1.CreateOptions{})
		if err != nil {
			return authv1.TokenReviewStatus{}, err
		}
		return tr.Status, nil
	})
}

// Fleets says whether a SPIFFE ID is the identity of one of our Envoy
// fleets (xdsserver.Authorizer implements it).
type Fleets interface {
	Known(id spiffeid.ID) bool
}

// Server is the identity service. Set the fields, then Serve (or use it as
// an http.Handler).
type Server struct {
	// CA signs the SVIDs; its certificate is the bundle.
	CA *pki.CA
	// TrustDomain of the SVIDs.
	TrustDomain spiffeid.TrustDomain
	// Reviewer checks the tokens.
	Reviewer Reviewer
	// Fleets are the ServiceAccounts that may get an SVID.
	Fleets Fleets
	// Audience the tokens must be bound to (default DefaultAudience).
	Audience string
	// SVIDLifetime is the SVIDs' validity (default DefaultSVIDLifetime,
	// never past the CA's own expiry).
	SVIDLifetime time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives every refusal and issue (default slog.Default()).
	Log *slog.Logger
	// Issued, when set, is told of every SVID issued: the pod's namespace
	// and name and the SVID's NotAfter (xdsserver.Server.RecordSVID, for
	// proxy-status).
	Issued func(namespace, pod string, notAfter time.Time)
	// Limiter bounds each client's requests (default: DefaultClientRate,
	// DefaultClientBurst).
	Limiter *ClientLimiter

	limiterOnce sync.Once
}

// ServeHTTP answers POST Path.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ok, wait := s.limiter().Allow(r.RemoteAddr, s.now()); !ok {
		secs := int(math.Ceil(wait.Seconds()))
		s.log().Warn("identity: client over its rate limit", "remote", r.RemoteAddr, "retryAfterSeconds", secs)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("too many requests from %s: retry in %d s", r.RemoteAddr, secs))
		return
	}
	if r.URL.Path != Path {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "POST only")
		return
	}
	resp, err := s.handle(r)
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrBadRequest):
			code = http.StatusBadRequest
		case errors.Is(err, ErrUnauthenticated):
			code = http.StatusUnauthorized
		case errors.Is(err, ErrForbidden):
			code = http.StatusForbidden
		}
		s.log().Warn("identity: SVID refused", "remote", r.RemoteAddr, "status", code, "error", err)
		writeError(w, code, err.Error())
		return
	}
	s.log().Info("identity: SVID issued", "remote", r.RemoteAddr, "id", resp.SPIFFEID, "expires", resp.ExpiresAt)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Issue runs the checks of the package comment for a bearer token and a
// CSR, and signs the SVID. Errors wrap ErrBadRequest, ErrUnauthenticated
// or ErrForbidden when the request is refused.
func (s *Server) Issue(ctx context.Context, token string, csrPEM []byte) (*SignResponse, error) {
	if token == "" {
		return nil, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	audience := cmp.Or(s.Audience, DefaultAudience)
	// The local checks first: a token they refuse costs no TokenReview.
	claimed, err := CheckToken(token, audience, s.now(), MaxTokenLifetime)
	if err != nil {
		return nil, err
	}
	if _, err := s.fleet(claimed); err != nil {
		return nil, err
	}
	st, err := s.Reviewer.Review(ctx, token, []string{audience})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	sa, err := CheckReview(st, audience)
	if err != nil {
		return nil, err
	}
	id, err := s.fleet(sa)
	if err != nil {
		return nil, err
	}
	csr, err := CheckCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	der, err := s.CA.Sign(id, csr.PublicKey, cmp.Or(s.SVIDLifetime, DefaultSVIDLifetime), pki.ClientAuth, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	cert, err := parseDER(der)
	if err != nil {
		return nil, err
	}
	if s.Issued != nil {
		s.Issued(sa.Namespace, sa.Pod, cert.NotAfter)
	}
	return &SignResponse{
		SPIFFEID:  id.String(),
		CertChain: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		Bundle:    string(s.CA.CertPEM),
		ExpiresAt: cert.NotAfter,
	}, nil
}

func (s *Server) handle(r *http.Request) (*SignResponse, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, fmt.Errorf("%w: no bearer token", ErrUnauthenticated)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the body: %v", ErrBadRequest, err)
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrBadRequest, maxBody)
	}
	var req SignRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: body: %v", ErrBadRequest, err)
	}
	return s.Issue(r.Context(), strings.TrimSpace(token), []byte(req.CSR))
}

// Serve serves the identity service on lis with tlsConfig (server
// authentication; the proxies have no certificate yet) until ctx ends.
func (s *Server) Serve(ctx context.Context, lis net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil {
		return errors.New("identity: the service needs TLS")
	}
	hs := &http.Server{
		Handler:           s,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.ServeTLS(lis, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) limiter() *ClientLimiter {
	s.limiterOnce.Do(func() {
		if s.Limiter == nil {
			s.Limiter = NewClientLimiter(DefaultClientRate, DefaultClientBurst)
		}
	})
	return s.Limiter
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Error: msg})
}
