package agent

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/xds-controller/xds-controller/pkg/identity"
)

// TokenSigner signs CSRs with the identity service, presenting the
// projected ServiceAccount token read from tokenFile at every request (the
// kubelet refreshes the file before the token expires).
func TokenSigner(c *identity.Client, tokenFile string) Signer {
	return SignerFunc(func(ctx context.Context, csrPEM []byte) (*identity.SignResponse, error) {
		tok, err := os.ReadFile(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading the ServiceAccount token: %w", err)
		}
		tok = bytes.TrimSpace(tok)
		if len(tok) == 0 {
			return nil, errNoToken
		}
		return c.Sign(ctx, string(tok), csrPEM)
	})
}
