package re2

// RE2's program size, counted the way RE2 builds the program (Latin-1):
// the parse tree is normalised to RE2's (parse.cc: classes cut at \xFF,
// x** squashed), simplified (simplify.cc: CoalesceWalker, SimplifyRepeat),
// stripped of a required literal prefix (regexp.cc RequiredPrefix) and of
// its ^ and $ anchors (compile.cc IsAnchorStart, IsAnchorEnd), compiled
// (compile.cc), optimised (prog.cc Optimize) and flattened (prog.cc
// Flatten), whose instruction count is RE2::ProgramSize.

import (
	"regexp/syntax"
	"slices"
)

const maxByte = 0xFF

// compiledSize is RE2's program size for re, a Go parse of the Latin-1
// form of the expression.
func compiledSize(re *syntax.Regexp) int {
	re = requiredPrefix(normalize(re))
	re = simplify(coalesce(re))
	anchored := anchorStart(&re, 0)
	anchorEnd(&re, 0)
	c := &compiler{insts: []inst{{op: opFail}}}
	all := c.cat(c.compile(re), c.match())
	start := all.begin
	if !anchored {
		all = c.cat(c.star(c.byteRange(0, maxByte), true), all)
	}
	unanchored := all.begin
	if c.over {
		// More than maxCompiled instructions: at least that many once
		// flattened, but for parts that cannot match (x\p{Greek}), which
		// RE2 drops and this count does not.
		return maxCompiled + 1
	}
	if start == 0 && unanchored == 0 {
		return 1 // no possible match: the Fail instruction only
	}
	p := &prog{insts: c.insts, start: start, unanchored: unanchored}
	p.optimize()
	return p.flatSize()
}

// normalize rewrites Go's parse tree into the one RE2's parser builds in
// Latin-1: classes cut at \xFF (empty: no match; one byte: a literal; [Aa]:
// a case-folded literal), "." a class without \n, case folding of ASCII
// letters only, and *, + and ? of a *, + or ? with the same flags
// squashed (parse.cc PushRepeatOp).
func normalize(re *syntax.Regexp) *syntax.Regexp {
	out := *re
	out.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, s := range re.Sub {
		out.Sub[i] = normalize(s)
	}
	switch out.Op {
	case syntax.OpAnyCharNotNL:
		out.Op, out.Rune = syntax.OpCharClass, []rune{0, '\n' - 1, '\n' + 1, maxByte}
		return classOrLiteral(&out)
	case syntax.OpCharClass:
		var rs []rune
		for i := 0; i < len(out.Rune); i += 2 {
			if lo, hi := out.Rune[i], min(out.Rune[i+1], maxByte); lo <= hi {
				rs = append(rs, lo, hi)
			}
		}
		out.Rune = rs
		return classOrLiteral(&out)
	case syntax.OpLiteral:
		if out.Flags&syntax.FoldCase != 0 {
			rs := slices.Clone(out.Rune)
			ascii := true
			for i, r := range rs {
				if !isLetter(r) {
					ascii = false
				}
				rs[i] = toLower(r)
			}
			out.Rune = rs
			if !ascii || len(rs) == 0 {
				// RE2 folds ASCII letters only; a string of others is
				// plain (the count is the same).
				out.Flags &^= syntax.FoldCase
			}
		}
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return repeatOp(out.Op, out.Sub[0], out.Flags)
	}
	return &out
}

// repeatOp is RE2's Regexp::Star, Plus and Quest: x** is x*, and a *, +
// or ? of a *, + or ? with the same flags is a *.
func repeatOp(op syntax.Op, sub *syntax.Regexp, f syntax.Flags) *syntax.Regexp {
	if (sub.Op == syntax.OpStar || sub.Op == syntax.OpPlus || sub.Op == syntax.OpQuest) && sub.Flags == f {
		if sub.Op == op || sub.Op == syntax.OpStar {
			return sub
		}
		sq := *sub
		sq.Op = syntax.OpStar
		return &sq
	}
	return &syntax.Regexp{Op: op, Flags: f, Sub: []*syntax.Regexp{sub}}
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

func toLower(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// classOrLiteral is RE2's PushRegexp for a class cut at \xFF.
func classOrLiteral(re *syntax.Regexp) *syntax.Regexp {
	switch {
	case len(re.Rune) == 0:
		return &syntax.Regexp{Op: syntax.OpNoMatch, Flags: re.Flags}
	case len(re.Rune) == 2 && re.Rune[0] == re.Rune[1]:
		return &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags &^ syntax.FoldCase, Rune: []rune{re.Rune[0]}}
	case len(re.Rune) == 4 && re.Rune[0] == re.Rune[1] && re.Rune[2] == re.Rune[3] &&
		re.Rune[0] >= 'A' && re.Rune[0] <= 'Z' && re.Rune[2] == re.Rune[0]+'a'-'A':
		return &syntax.Regexp{Op: syntax.OpLiteral, Flags: re.Flags | syntax.FoldCase, Rune: []rune{re.Rune[2]}}
	}
	return re
}

// coalesce is RE2's CoalesceWalker: in a concatenation, x*x+, x+x,
// x{2}x* and x*xxy become one repetition of x (simplify.cc).
func coalesce(re *syntax.Regexp) *syntax.Regexp {
	out := *re
	out.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, s := range re.Sub {
		out.Sub[i] = coalesce(s)
	}
	if out.Op != syntax.OpConcat {
		return &out
	}
	changed := false
	for i := 0; i+1 < len(out.Sub); i++ {
		if canCoalesce(out.Sub[i], out.Sub[i+1]) {
			out.Sub[i], out.Sub[i+1] = doCoalesce(out.Sub[i], out.Sub[i+1])
			changed = true
		}
	}
	if changed {
		out.Sub = slices.DeleteFunc(out.Sub, func(s *syntax.Regexp) bool { return s.Op == syntax.OpEmptyMatch })
	}
	return &out
}

func isRepeat(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		return true
	}
	return false
}

func canCoalesce(r1, r2 *syntax.Regexp) bool {
	if !isRepeat(r1) {
		return false
	}
	x := r1.Sub[0]
	if !(x.Op == syntax.OpLiteral && len(x.Rune) == 1 || x.Op == syntax.OpCharClass || x.Op == syntax.OpAnyChar) {
		return false
	}
	if isRepeat(r2) && equal(x, r2.Sub[0]) && r1.Flags&syntax.NonGreedy == r2.Flags&syntax.NonGreedy {
		return true
	}
	if equal(x, r2) {
		return true
	}
	return x.Op == syntax.OpLiteral && r2.Op == syntax.OpLiteral && len(r2.Rune) > 1 && r2.Rune[0] == x.Rune[0] &&
		x.Flags&syntax.FoldCase == r2.Flags&syntax.FoldCase
}

func doCoalesce(r1, r2 *syntax.Regexp) (*syntax.Regexp, *syntax.Regexp) {
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch}
	n := &syntax.Regexp{Op: syntax.OpRepeat, Flags: r1.Flags, Sub: []*syntax.Regexp{r1.Sub[0]}}
	switch r1.Op {
	case syntax.OpStar:
		n.Min, n.Max = 0, -1
	case syntax.OpPlus:
		n.Min, n.Max = 1, -1
	case syntax.OpQuest:
		n.Min, n.Max = 0, 1
	default:
		n.Min, n.Max = r1.Min, r1.Max
	}
	switch r2.Op {
	case syntax.OpStar:
		n.Max = -1
	case syntax.OpPlus:
		n.Min++
		n.Max = -1
	case syntax.OpQuest:
		if n.Max != -1 {
			n.Max++
		}
	case syntax.OpRepeat:
		n.Min += r2.Min
		if r2.Max == -1 {
			n.Max = -1
		} else if n.Max != -1 {
			n.Max += r2.Max
		}
	case syntax.OpLiteral:
		if len(r2.Rune) > 1 {
			k := 1
			for k < len(r2.Rune) && r2.Rune[k] == r1.Sub[0].Rune[0] {
				k++
			}
			n.Min += k
			if n.Max != -1 {
				n.Max += k
			}
			if k == len(r2.Rune) {
				return empty, n
			}
			rest := *r2
			rest.Rune = r2.Rune[k:]
			return n, &rest
		}
		fallthrough
	default: // the same literal, class or any character
		n.Min++
		if n.Max != -1 {
			n.Max++
		}
	}
	return empty, n
}

// equal is RE2's Regexp::Equal for the operands canCoalesce compares.
func equal(a, b *syntax.Regexp) bool {
	if a.Op != b.Op {
		return false
	}
	switch a.Op {
	case syntax.OpLiteral:
		return slices.Equal(a.Rune, b.Rune) && a.Flags&syntax.FoldCase == b.Flags&syntax.FoldCase
	case syntax.OpCharClass:
		return slices.Equal(a.Rune, b.Rune)
	}
	return a.Op == syntax.OpAnyChar
}

// simplify is RE2's SimplifyWalker: counted repetitions become
// concatenations of copies (x{2,5} is xx(x(x(x)?)?)?).
func simplify(re *syntax.Regexp) *syntax.Regexp {
	out := *re
	out.Sub = make([]*syntax.Regexp, len(re.Sub))
	for i, s := range re.Sub {
		out.Sub[i] = simplify(s)
	}
	switch out.Op {
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		if out.Sub[0].Op == syntax.OpEmptyMatch {
			return out.Sub[0]
		}
	case syntax.OpRepeat:
		if out.Sub[0].Op == syntax.OpEmptyMatch {
			return out.Sub[0]
		}
		return simplifyRepeat(out.Sub[0], out.Min, out.Max, out.Flags)
	}
	return &out
}

func isEmptyOp(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginText, syntax.OpEndText:
		return true
	case syntax.OpConcat, syntax.OpAlternate:
		for _, s := range re.Sub {
			if !isEmptyOp(s) {
				return false
			}
		}
		return true
	}
	return false
}

func simplifyRepeat(x *syntax.Regexp, lo, hi int, f syntax.Flags) *syntax.Regexp {
	op := func(o syntax.Op, subs ...*syntax.Regexp) *syntax.Regexp {
		if o != syntax.OpConcat {
			return repeatOp(o, subs[0], f)
		}
		return &syntax.Regexp{Op: o, Flags: f, Sub: subs}
	}
	if isEmptyOp(x) {
		// An empty-width assertion holds once or not.
		lo, hi = min(lo, 1), min(hi, 1) // {n,} stays {1,} (hi -1)
	}
	if hi == -1 {
		switch lo {
		case 0:
			return op(syntax.OpStar, x)
		case 1:
			return op(syntax.OpPlus, x)
		}
		subs := make([]*syntax.Regexp, lo)
		for i := range lo - 1 {
			subs[i] = x
		}
		subs[lo-1] = op(syntax.OpPlus, x)
		return op(syntax.OpConcat, subs...)
	}
	if lo == 0 && hi == 0 {
		return &syntax.Regexp{Op: syntax.OpEmptyMatch, Flags: f}
	}
	if lo == 1 && hi == 1 {
		return x
	}
	var n *syntax.Regexp
	if lo > 0 {
		subs := make([]*syntax.Regexp, lo)
		for i := range subs {
			subs[i] = x
		}
		n = concat(subs, f)
	}
	if hi > lo {
		suf := op(syntax.OpQuest, x)
		for i := lo + 1; i < hi; i++ {
			suf = op(syntax.OpQuest, concat([]*syntax.Regexp{x, suf}, f))
		}
		if n == nil {
			n = suf
		} else {
			n = concat([]*syntax.Regexp{n, suf}, f)
		}
	}
	if n == nil {
		return &syntax.Regexp{Op: syntax.OpNoMatch, Flags: f}
	}
	return n
}

// concat is RE2's Regexp::Concat: one operand is itself.
func concat(subs []*syntax.Regexp, f syntax.Flags) *syntax.Regexp {
	if len(subs) == 1 {
		return subs[0]
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Flags: f, Sub: subs}
}

// requiredPrefix is RE2::Init's use of RequiredPrefix: for ^ (one or
// more) then a literal, the literal is matched apart and only the rest is
// compiled, unanchored.
func requiredPrefix(re *syntax.Regexp) *syntax.Regexp {
	if re.Op != syntax.OpConcat {
		return re
	}
	i := 0
	for i < len(re.Sub) && re.Sub[i].Op == syntax.OpBeginText {
		i++
	}
	if i == 0 || i >= len(re.Sub) || re.Sub[i].Op != syntax.OpLiteral {
		return re
	}
	if i+1 < len(re.Sub) {
		return concat(re.Sub[i+1:], re.Flags)
	}
	return &syntax.Regexp{Op: syntax.OpEmptyMatch, Flags: re.Flags}
}

// anchorStart is RE2's IsAnchorStart: a leading ^ (in a concatenation's
// first operand or a group, 4 levels deep at most) is removed and makes
// the program anchored.
func anchorStart(pre **syntax.Regexp, depth int) bool {
	return anchor(pre, depth, syntax.OpBeginText, func(re *syntax.Regexp) int { return 0 })
}

// anchorEnd is RE2's IsAnchorEnd, for a trailing $.
func anchorEnd(pre **syntax.Regexp, depth int) bool {
	return anchor(pre, depth, syntax.OpEndText, func(re *syntax.Regexp) int { return len(re.Sub) - 1 })
}

func anchor(pre **syntax.Regexp, depth int, want syntax.Op, pick func(*syntax.Regexp) int) bool {
	re := *pre
	if re == nil || depth >= 4 {
		return false
	}
	switch re.Op {
	case syntax.OpConcat:
		if len(re.Sub) > 0 {
			i := pick(re)
			sub := re.Sub[i]
			if anchor(&sub, depth+1, want, pick) {
				cp := *re
				cp.Sub = slices.Clone(re.Sub)
				cp.Sub[i] = sub
				*pre = &cp
				return true
			}
		}
	case syntax.OpCapture:
		sub := re.Sub[0]
		if anchor(&sub, depth+1, want, pick) {
			cp := *re
			cp.Sub = []*syntax.Regexp{sub}
			*pre = &cp
			return true
		}
	case want:
		*pre = &syntax.Regexp{Op: syntax.OpEmptyMatch, Flags: re.Flags}
		return true
	}
	return false
}
