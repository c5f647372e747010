package oidc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/xds-controller/xds-controller/internal/testservers/jwt"
)

// This file implements op.Storage in memory, on the Provider's maps under
// its mutex. Only what the code and refresh flows need does anything; the
// rest (JWT profile grants, token exchange, introspection of foreign
// tokens) answers "not supported".

var errNotFound = errors.New("not found")

// authRequest is one authorization request, from /authorize to the code
// exchange.
type authRequest struct {
	id       string
	req      oidc.AuthRequest
	userID   string
	authTime time.Time
	done     bool
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.req.ClientID }
func (a *authRequest) GetNonce() string                   { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.userID }
func (a *authRequest) Done() bool                         { return a.done }

func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	m := a.req.CodeChallengeMethod
	if m == "" {
		m = oidc.CodeChallengeMethodPlain
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: m}
}

// refreshToken is an issued refresh token; the token string is its key.
type refreshToken struct {
	subject, clientID string
	scopes, audience  []string
	amr               []string
	authTime          time.Time
}

var _ op.RefreshTokenRequest = (*refreshToken)(nil)

func (r *refreshToken) GetAMR() []string            { return r.amr }
func (r *refreshToken) GetAudience() []string       { return r.audience }
func (r *refreshToken) GetAuthTime() time.Time      { return r.authTime }
func (r *refreshToken) GetClientID() string         { return r.clientID }
func (r *refreshToken) GetScopes() []string         { return r.scopes }
func (r *refreshToken) GetSubject() string          { return r.subject }
func (r *refreshToken) SetCurrentScopes(s []string) { r.scopes = s }

// accessToken is an issued access token, for the userinfo endpoint.
type accessToken struct {
	subject, clientID string
	scopes            []string
	expiry            time.Time
}

// signingKey adapts a jwt.Key to op.SigningKey and op.Key.
type signingKey struct{ k *jwt.Key }

func (s signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return s.k.Algorithm }
func (s signingKey) Algorithm() jose.SignatureAlgorithm          { return s.k.Algorithm }
func (s signingKey) ID() string                                  { return s.k.ID }
func (s signingKey) Use() string                                 { return "sig" }

// Key is the private key when signing (op.SigningKey) and the public key
// when published (op.Key): op calls the two through different interfaces,
// so the two views are two types.
func (s signingKey) Key() any { return s.k.Private }

type publicKey struct{ signingKey }

func (p publicKey) Key() any { return p.k.Private.Public() }

func randomID() string { return rand.Text() }

// storage is the Provider seen as op.Storage.
type storage struct{ p *Provider }

var _ op.Storage = storage{}

func (s storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	a := &authRequest{id: randomID(), req: *req}
	p.authRequests[a.id] = a
	return a, nil
}

func (s storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.authRequests[id]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("auth request %q: %w", id, errNotFound)
}

func (s storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.authRequests[p.codes[code]]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("code: %w", errNotFound)
}

func (s storage) SaveAuthCode(_ context.Context, id, code string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes[code] = id
	return nil
}

// DeleteAuthRequest runs after the code exchange: the code is single use.
func (s storage) DeleteAuthRequest(_ context.Context, id string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.authRequests, id)
	for code, reqID := range p.codes {
		if reqID == id {
			delete(p.codes, code)
		}
	}
	return nil
}

func (s storage) newAccessToken(subject, clientID string, scopes []string) (string, time.Time) {
	p := s.p
	id, exp := randomID(), time.Now().Add(p.tokenTTL)
	p.accessTokens[id] = &accessToken{subject: subject, clientID: clientID, scopes: scopes, expiry: exp}
	return id, exp
}

func clientOf(req op.TokenRequest) string {
	switch r := req.(type) {
	case op.AuthRequest:
		return r.GetClientID()
	case op.RefreshTokenRequest:
		return r.GetClientID()
	}
	return ""
}

func (s storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	id, exp := s.newAccessToken(req.GetSubject(), clientOf(req), req.GetScopes())
	return id, exp, nil
}

// CreateAccessAndRefreshTokens issues an access token and a new refresh
// token; a refresh token used to get them is spent (rotation, as OAuth 2.0
// Security BCP section 4.14 recommends).
func (s storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	rt := &refreshToken{subject: req.GetSubject(), clientID: clientOf(req), scopes: req.GetScopes(), audience: req.GetAudience()}
	switch r := req.(type) {
	case op.AuthRequest:
		rt.amr, rt.authTime = r.GetAMR(), r.GetAuthTime()
	case op.RefreshTokenRequest:
		rt.amr, rt.authTime = r.GetAMR(), r.GetAuthTime()
	}
	if current != "" {
		if _, ok := p.refreshTokens[current]; !ok {
			return "", "", time.Time{}, fmt.Errorf("refresh token: %w", errNotFound)
		}
		delete(p.refreshTokens, current)
	}
	token := randomID()
	p.refreshTokens[token] = rt
	id, exp := s.newAccessToken(rt.subject, rt.clientID, rt.scopes)
	return id, token, exp, nil
}

func (s storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	rt, ok := p.refreshTokens[token]
	if !ok {
		return nil, fmt.Errorf("refresh token: %w", errNotFound)
	}
	c := *rt
	return &c, nil
}

func (s storage) TerminateSession(_ context.Context, userID, clientID string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for token, rt := range p.refreshTokens {
		if rt.subject == userID && rt.clientID == clientID {
			delete(p.refreshTokens, token)
		}
	}
	return nil
}

func (s storage) RevokeToken(_ context.Context, token, _, clientID string) *oidc.Error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt, ok := p.refreshTokens[token]; ok && rt.clientID == clientID {
		delete(p.refreshTokens, token)
	}
	delete(p.accessTokens, token)
	return nil
}

func (s storage) GetRefreshTokenInfo(_ context.Context, clientID, token string) (string, string, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if rt, ok := p.refreshTokens[token]; ok && rt.clientID == clientID {
		return rt.subject, token, nil
	}
	return "", "", op.ErrInvalidRefreshToken
}

func (s storage) SigningKey(context.Context) (op.SigningKey, error) {
	k := s.p.Keys.Current()
	if k == nil {
		return nil, errors.New("no signing key")
	}
	return signingKey{k}, nil
}

func (s storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	var algs []jose.SignatureAlgorithm
	for _, k := range s.p.Keys.Keys() {
		if !slices.Contains(algs, k.Algorithm) {
			algs = append(algs, k.Algorithm)
		}
	}
	return algs, nil
}

// KeySet is what the JWKS endpoint (/keys) publishes: every key of the
// set, old ones included until RemoveOld.
func (s storage) KeySet(context.Context) ([]op.Key, error) {
	var keys []op.Key
	for _, k := range s.p.Keys.Keys() {
		keys = append(keys, publicKey{signingKey{k}})
	}
	return keys, nil
}

func (s storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[id]
	if !ok {
		return nil, fmt.Errorf("client %q: %w", id, errNotFound)
	}
	return &client{c: c, loginURL: p.Issuer + loginPath, idTTL: p.tokenTTL}, nil
}

func (s storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[id]; ok && c.Secret != "" && c.Secret == secret {
		return nil
	}
	return fmt.Errorf("client %q: wrong or missing secret", id)
}

// SetUserinfoFromScopes is deprecated in op and left empty, as it asks;
// SetUserinfoFromRequest does the work.
func (s storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// SetUserinfoFromRequest fills the ID token's user claims.
func (s storage) SetUserinfoFromRequest(_ context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.userinfo(info, req.GetSubject(), scopes)
}

func (s storage) userinfo(info *oidc.UserInfo, subject string, scopes []string) error {
	p := s.p
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.users[subject]
	if !ok {
		return fmt.Errorf("user %q: %w", subject, errNotFound)
	}
	info.Subject = u.Username
	for _, scope := range scopes {
		switch scope {
		case oidc.ScopeProfile:
			info.PreferredUsername = u.Username
			info.Name = u.Name
		case oidc.ScopeEmail:
			info.Email, info.EmailVerified = u.Email, oidc.Bool(u.Email != "")
		}
	}
	for k, v := range u.Claims {
		info.AppendClaims(k, v)
	}
	return nil
}

func (s storage) SetUserinfoFromToken(_ context.Context, info *oidc.UserInfo, tokenID, _, _ string) error {
	s.p.mu.Lock()
	at, ok := s.p.accessTokens[tokenID]
	s.p.mu.Unlock()
	if !ok || time.Now().After(at.expiry) {
		return fmt.Errorf("access token: %w", errNotFound)
	}
	return s.userinfo(info, at.subject, at.scopes)
}

func (s storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, _, clientID string) error {
	s.p.mu.Lock()
	at, ok := s.p.accessTokens[tokenID]
	s.p.mu.Unlock()
	if !ok || time.Now().After(at.expiry) {
		return nil // inactive
	}
	resp.Active, resp.Subject, resp.ClientID = true, at.subject, at.clientID
	resp.Scope = at.scopes
	return nil
}

// GetPrivateClaimsFromScopes adds the user's own claims (User.Claims) to
// JWT access tokens, so jwt_authn rules on claims can be tested with
// tokens from a real login.
func (s storage) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, _ []string) (map[string]any, error) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	if u, ok := s.p.users[userID]; ok && len(u.Claims) > 0 {
		return maps.Clone(u.Claims), nil
	}
	return nil, nil
}

func (s storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("jwt profile grant not supported")
}

func (s storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errors.New("jwt profile grant not supported")
}

func (s storage) Health(context.Context) error { return nil }

// checkPassword returns the user whose username and password match.
func (p *Provider) checkPassword(username, password string) (User, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u, ok := p.users[strings.TrimSpace(username)]
	return u, ok && u.Password != "" && u.Password == password
}
