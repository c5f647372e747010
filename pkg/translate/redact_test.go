package translate

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/xds-controller/xds-controller/pkg/gatewayapi"
	"github.com/xds-controller/xds-controller/pkg/provider/file"
)

// TestRedact: for every golden input, neither MarshalIR nor MarshalXDS
// prints a private key of its Secrets (as PEM or base64) unless asked to,
// and the redacted IR differs from the full one only where the keys were.
func TestRedact(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("golden inputs: %v %v", inputs, err)
	}
	shownIR, shownXDS := 0, 0
	for _, in := range inputs {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		var keys [][]byte
		for _, s := range res.Secrets {
			if k := bytes.TrimSpace(s.Data["tls.key"]); len(k) > 0 {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		out, err := Run(res, gatewayapi.Options{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		irFull, err1 := MarshalIR(out.Result, true)
		irRed, err2 := MarshalIR(out.Result, false)
		xdsFull, err3 := MarshalXDS(out.XDS, true)
		xdsRed, err4 := MarshalXDS(out.XDS, false)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			t.Fatalf("%s: %v %v %v %v", in, err1, err2, err3, err4)
		}
		want := irFull
		for _, k := range keys {
			// Base64 of the PEM with and without its final newline: the IR
			// keeps the Secret's bytes as they are.
			for _, enc := range [][]byte{k, []byte(base64.StdEncoding.EncodeToString(append(k, '\n'))), []byte(base64.StdEncoding.EncodeToString(k))} {
				if bytes.Contains(irRed, enc) {
					t.Errorf("%s: -o ir prints a private key (%.20s...)", in, enc)
				}
				if bytes.Contains(xdsRed, enc) {
					t.Errorf("%s: -o xds prints a private key (%.20s...)", in, enc)
				}
				if bytes.Contains(irFull, enc) {
					shownIR++
				}
				if bytes.Contains(xdsFull, enc) {
					shownXDS++
				}
				want = bytes.ReplaceAll(want, append([]byte("privateKey: "), enc...), []byte("privateKey: '"+Redacted+"'"))
			}
		}
		if d := cmp.Diff(string(want), string(irRed)); d != "" {
			t.Errorf("%s: the redacted IR differs from the full one elsewhere than its keys (-want +got):\n%s", in, d)
		}
	}
	if shownIR == 0 || shownXDS == 0 {
		t.Errorf("with showSecrets the keys were printed %d times in the IR and %d in the xDS: the test finds no key to hide", shownIR, shownXDS)
	}
}

// TestRedactCredentials: for every golden input with SecurityPolicies,
// neither MarshalIR nor MarshalXDS prints an API key or a password hash
// of their Secrets unless asked to (both are in Envoy's route
// configurations, which Redact rewrites).
func TestRedactCredentials(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.in.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("golden inputs: %v %v", inputs, err)
	}
	shown := 0
	for _, in := range inputs {
		res, _, err := file.Load(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.SecurityPolicies) == 0 {
			continue
		}
		input, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Run(res, GoldenOptions(input))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		irFull, _ := MarshalIR(out.Result, true)
		irRed, _ := MarshalIR(out.Result, false)
		xdsFull, _ := MarshalXDS(out.XDS, true)
		xdsRed, err := MarshalXDS(out.XDS, false)
		if err != nil {
			t.Fatal(err)
		}
		var creds []string
		for _, p := range out.Result.IR.Gateways {
			for _, l := range p.Listeners {
				for _, r := range l.HTTPRoutes {
					if a := r.Filters.APIKeyAuth; a != nil {
						for _, c := range a.Credentials {
							creds = append(creds, c.Key)
						}
					}
					if b := r.Filters.BasicAuth; b != nil {
						for _, u := range b.Users {
							creds = append(creds, u.SHA)
						}
					}
					if o := r.Filters.OIDC; o != nil {
						// JSON and YAML print bytes in base64.
						creds = append(creds, o.ClientSecret, base64.StdEncoding.EncodeToString([]byte(o.ClientSecret)), base64.StdEncoding.EncodeToString(o.HMACKey))
					}
				}
			}
		}
		for _, c := range creds {
			if bytes.Contains(irRed, []byte(c)) || bytes.Contains(xdsRed, []byte(c)) {
				t.Errorf("%s: a redacted output prints the credential %q", in, c)
			}
			if bytes.Contains(irFull, []byte(c)) && bytes.Contains(xdsFull, []byte(c)) {
				shown++
			}
		}
	}
	if shown == 0 {
		t.Error("no credential was printed with showSecrets: the test finds nothing to hide")
	}
}
