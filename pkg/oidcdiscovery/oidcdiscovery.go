// Package oidcdiscovery fetches OpenID providers' discovery documents
// (<issuer>/.well-known/openid-configuration, OpenID Connect Discovery
// 1.0) for the translation, which is pure and reads them as an input
// (gatewayapi.Options.OIDCProviders): the providers call Cache.Providers
// with the documents the snapshot needs (gatewayapi.OIDCDiscoveries)
// before they translate, and Cache.Run keeps the documents fresh,
// calling OnChange when one changes so that the policies that use it are
// translated again.
//
// A document is fetched with TLS verified by the policy's CA
// (caCertificateRefs) or the system trust store, within a timeout and a
// size limit, without following redirects; its issuer must be the one
// asked for (section 4.3) and it must name an authorization and a token
// endpoint. A document that cannot be had is an entry with an Error,
// which the translation reports on the policy (ResolvedRefs=False).
package oidcdiscovery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
)

// Defaults of Config.
const (
	DefaultRefresh  = 10 * time.Minute
	DefaultRetry    = 30 * time.Second
	DefaultTimeout  = 5 * time.Second
	DefaultMaxBytes = 1 << 20
)

// WellKnownPath is the discovery document's path under the issuer.
const WellKnownPath = "/.well-known/openid-configuration"

// Config tunes a Cache. The zero value takes the defaults.
type Config struct {
	// Refresh is how often a fetched document is fetched again
	// (DefaultRefresh), Retry how often one that failed is
	// (DefaultRetry).
	Refresh, Retry time.Duration
	// Timeout bounds one fetch (DefaultTimeout).
	Timeout time.Duration
	// MaxBytes bounds a document's size (DefaultMaxBytes).
	MaxBytes int64
	// OnChange, when set, is called after a fetch changed an entry's
	// result: a first fetch that Providers started (from its goroutine),
	// or a round of Run's (from Run's goroutine).
	OnChange func()
}

// MaxFetches bounds the first fetches under way at once (Providers).
const MaxFetches = 4

// Cache holds the discovery documents by gatewayapi.OIDCDiscoveryKey
// (issuer and CA). It is safe for concurrent use.
type Cache struct {
	cfg     Config
	mu      sync.Mutex
	entries map[string]*entry
	// fetches holds a token per first fetch under way (MaxFetches).
	fetches chan struct{}
}

type entry struct {
	req     gatewayapi.OIDCDiscovery
	result  gatewayapi.OIDCProvider
	fetched time.Time
}

// New returns an empty Cache.
func New(cfg Config) *Cache {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Retry <= 0 {
		cfg.Retry = DefaultRetry
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return &Cache{cfg: cfg, entries: map[string]*entry{}, fetches: make(chan struct{}, MaxFetches)}
}

// Providers returns what is known of every document of reqs, by
// gatewayapi.OIDCDiscoveryKey, without waiting for the network: a document
// never asked for before is fetched in the background (at most
// MaxFetches at once) and reads Pending until it is there, when OnChange
// is called, so that a provider that answers slowly or never delays
// nothing but the policies that name it (a translation run never waits
// for a tenant's issuer). Entries not in reqs are forgotten.
func (c *Cache) Providers(reqs []gatewayapi.OIDCDiscovery) map[string]gatewayapi.OIDCProvider {
	out, missing := c.lookup(reqs)
	for k, req := range missing {
		go func() {
			c.fetches <- struct{}{}
			r := c.fetch(context.Background(), req)
			<-c.fetches
			if c.settle(k, r) && c.cfg.OnChange != nil {
				c.cfg.OnChange()
			}
		}()
	}
	return out
}

// Fetch is Providers for a one-off translation (the translate and
// config-dump commands): it waits, within ctx and the timeout, for the
// documents never fetched before.
func (c *Cache) Fetch(ctx context.Context, reqs []gatewayapi.OIDCDiscovery) map[string]gatewayapi.OIDCProvider {
	out, missing := c.lookup(reqs)
	var wg sync.WaitGroup
	for k, req := range missing {
		wg.Go(func() { c.settle(k, c.fetch(ctx, req)) })
	}
	wg.Wait()
	if len(missing) > 0 {
		out, _ = c.lookup(reqs)
	}
	return out
}

// lookup forgets the entries not in reqs, adds a Pending entry for each
// request never seen (returned in missing, by key) and returns every
// request's result.
func (c *Cache) lookup(reqs []gatewayapi.OIDCDiscovery) (out map[string]gatewayapi.OIDCProvider, missing map[string]gatewayapi.OIDCDiscovery) {
	want := map[string]gatewayapi.OIDCDiscovery{}
	for _, r := range reqs {
		want[gatewayapi.OIDCDiscoveryKey(r.Issuer, r.CA)] = r
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if _, ok := want[k]; !ok {
			delete(c.entries, k)
		}
	}
	out = make(map[string]gatewayapi.OIDCProvider, len(want))
	for k, r := range want {
		e := c.entries[k]
		if e == nil {
			e = &entry{req: r, result: gatewayapi.OIDCProvider{Pending: true}}
			c.entries[k] = e
			if missing == nil {
				missing = map[string]gatewayapi.OIDCDiscovery{}
			}
			missing[k] = r
		}
		out[k] = e.result
	}
	return out, missing
}

// settle records the first result of the Pending entry k and says whether
// it did (false: the entry was forgotten meanwhile).
func (c *Cache) settle(k string, r gatewayapi.OIDCProvider) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	if e == nil || !e.result.Pending {
		return false
	}
	e.result, e.fetched = r, time.Now()
	return true
}

// Run fetches again, until ctx ends, every entry whose time has come
// (Refresh after a success, Retry after a failure), checking every tick
// (a tenth of Retry), and calls OnChange once after a round that
// changed a result.
func (c *Cache) Run(ctx context.Context) {
	t := time.NewTicker(c.cfg.Retry / 10)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.refresh(ctx, time.Now()) && c.cfg.OnChange != nil {
			c.cfg.OnChange()
		}
	}
}

// refresh fetches the entries due at now and says whether a result
// changed.
func (c *Cache) refresh(ctx context.Context, now time.Time) bool {
	c.mu.Lock()
	due := map[string]gatewayapi.OIDCDiscovery{}
	for k, e := range c.entries {
		if e.result.Pending {
			continue // its first fetch is under way (Providers)
		}
		wait := c.cfg.Refresh
		if e.result.Error != "" {
			wait = c.cfg.Retry
		}
		if now.Sub(e.fetched) >= wait {
			due[k] = e.req
		}
	}
	c.mu.Unlock()
	changed := false
	for k, req := range due {
		r := c.fetch(ctx, req)
		c.mu.Lock()
		if e := c.entries[k]; e != nil {
			changed = changed || e.result != r
			e.result, e.fetched = r, time.Now()
		}
		c.mu.Unlock()
	}
	return changed
}

// document is what a discovery document says that a login uses.
type document struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	EndSessionEndpoint    string `json:"end_session_endpoint"`
}

// fetch GETs req's document and reads it, or says why it cannot be used.
func (c *Cache) fetch(ctx context.Context, req gatewayapi.OIDCDiscovery) gatewayapi.OIDCProvider {
	d, err := c.get(ctx, req)
	if err != nil {
		return gatewayapi.OIDCProvider{Error: err.Error()}
	}
	return gatewayapi.OIDCProvider{AuthorizationEndpoint: d.AuthorizationEndpoint, TokenEndpoint: d.TokenEndpoint, EndSessionEndpoint: d.EndSessionEndpoint}
}

func (c *Cache) get(ctx context.Context, req gatewayapi.OIDCDiscovery) (*document, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(req.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(req.CA) {
			return nil, errors.New("the CA certificates do not parse")
		}
		tlsConfig.RootCAs = pool
	}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: tlsConfig, Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true},
		Timeout:   c.cfg.Timeout,
		// A redirect is an error: the document is at the issuer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	u := strings.TrimSuffix(req.Issuer, "/") + WellKnownPath
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Accept", "application/json")
	resp, err := client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.cfg.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if int64(len(body)) > c.cfg.MaxBytes {
		return nil, fmt.Errorf("GET %s: the document is larger than %d bytes", u, c.cfg.MaxBytes)
	}
	var d document
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("GET %s: not a JSON discovery document: %w", u, err)
	}
	switch {
	case d.Issuer != req.Issuer:
		return nil, fmt.Errorf("GET %s: the document's issuer is %q, not %q (OpenID Connect Discovery 4.3)", u, d.Issuer, req.Issuer)
	case d.AuthorizationEndpoint == "" || d.TokenEndpoint == "":
		return nil, fmt.Errorf("GET %s: the document has no authorization_endpoint or token_endpoint", u)
	}
	return &d, nil
}
