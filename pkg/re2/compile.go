package re2

// RE2's compiler (compile.cc) for Latin-1, its Optimize and its Flatten
// (prog.cc), reduced to what decides the number of instructions.

import (
	"regexp/syntax"
	"slices"
)

type opcode uint8

const (
	opFail opcode = iota
	opAlt
	opAltMatch
	opByteRange
	opCapture
	opEmptyWidth
	opMatch
	opNop
)

type inst struct {
	op        opcode
	out, out1 int
	lo, hi    rune // opByteRange
}

// hole is an unpatched out (out1 when second) of an instruction.
type hole struct {
	inst   int
	second bool
}

// frag is a compiled fragment: its entry, its holes, and whether it
// matches the empty string (compile.cc Frag).
type frag struct {
	begin    int
	end      []hole
	nullable bool
}

// maxCompiled bounds the instructions compile allocates: beyond it, the
// program is far over any limit Envoy is given, and counting it exactly
// (Flatten is quadratic) would let one expression take seconds.
const maxCompiled = 1000

type compiler struct {
	insts []inst
	// over is set when more than maxCompiled instructions were needed.
	over bool
}

func (c *compiler) alloc(i inst) int {
	if len(c.insts) > maxCompiled {
		c.over = true
		return 0 // compile returns no more fragments once over
	}
	c.insts = append(c.insts, i)
	return len(c.insts) - 1
}

func (c *compiler) patch(l []hole, to int) {
	for _, h := range l {
		if h.second {
			c.insts[h.inst].out1 = to
		} else {
			c.insts[h.inst].out = to
		}
	}
}

func isNoMatch(f frag) bool { return f.begin == 0 }

func (c *compiler) cat(a, b frag) frag {
	if isNoMatch(a) || isNoMatch(b) {
		return frag{}
	}
	// Elide a leading no-op.
	if in := c.insts[a.begin]; in.op == opNop && len(a.end) == 1 && a.end[0] == (hole{a.begin, false}) && in.out == 0 {
		c.patch(a.end, b.begin)
		return b
	}
	c.patch(a.end, b.begin)
	return frag{a.begin, b.end, a.nullable && b.nullable}
}

func (c *compiler) alt(a, b frag) frag {
	if isNoMatch(a) {
		return b
	}
	if isNoMatch(b) {
		return a
	}
	id := c.alloc(inst{op: opAlt, out: a.begin, out1: b.begin})
	return frag{id, append(append([]hole{}, a.end...), b.end...), a.nullable || b.nullable}
}

// loop is the Alt of plus, star and quest: out (greedy) or out1
// (non-greedy) is body; the other is the way out.
func (c *compiler) loop(body int, nongreedy bool) (int, hole) {
	if nongreedy {
		return c.alloc(inst{op: opAlt, out1: body}), hole{len(c.insts) - 1, false}
	}
	return c.alloc(inst{op: opAlt, out: body}), hole{len(c.insts) - 1, true}
}

func (c *compiler) plus(a frag, nongreedy bool) frag {
	id, exit := c.loop(a.begin, nongreedy)
	c.patch(a.end, id)
	return frag{a.begin, []hole{exit}, a.nullable}
}

func (c *compiler) star(a frag, nongreedy bool) frag {
	// A nullable body needs x+ made optional for priorities' sake.
	if a.nullable {
		return c.quest(c.plus(a, nongreedy), nongreedy)
	}
	id, exit := c.loop(a.begin, nongreedy)
	c.patch(a.end, id)
	return frag{id, []hole{exit}, true}
}

func (c *compiler) quest(a frag, nongreedy bool) frag {
	if isNoMatch(a) {
		return c.nop()
	}
	id, exit := c.loop(a.begin, nongreedy)
	return frag{id, append([]hole{exit}, a.end...), true}
}

func (c *compiler) byteRange(lo, hi rune) frag {
	id := c.alloc(inst{op: opByteRange, lo: lo, hi: hi})
	return frag{id, []hole{{id, false}}, false}
}

func (c *compiler) nop() frag {
	id := c.alloc(inst{op: opNop})
	return frag{id, []hole{{id, false}}, true}
}

func (c *compiler) match() frag {
	return frag{begin: c.alloc(inst{op: opMatch})}
}

func (c *compiler) emptyWidth() frag {
	id := c.alloc(inst{op: opEmptyWidth})
	return frag{id, []hole{{id, false}}, true}
}

func (c *compiler) capture(a frag) frag {
	if isNoMatch(a) {
		return frag{}
	}
	id := c.alloc(inst{op: opCapture, out: a.begin})
	c.alloc(inst{op: opCapture})
	c.patch(a.end, id+1)
	return frag{id, []hole{{id + 1, false}}, a.nullable}
}

// class compiles a character class: one instruction per range, the
// upper-case ranges left out when the class folds ASCII case the same way
// (compile.cc kRegexpCharClass).
func (c *compiler) class(rs []rune) frag {
	folds := foldsASCII(rs)
	f := frag{}
	for i := 0; i < len(rs); i += 2 {
		lo, hi := rs[i], rs[i+1]
		if folds && 'A' <= lo && hi <= 'Z' {
			continue
		}
		r := c.byteRange(lo, hi)
		if isNoMatch(f) {
			f = r
			continue
		}
		id := c.alloc(inst{op: opAlt, out: f.begin, out1: r.begin})
		f = frag{id, append(f.end, r.end...), false}
	}
	return f
}

func foldsASCII(rs []rune) bool {
	in := func(r rune) bool {
		for i := 0; i < len(rs); i += 2 {
			if rs[i] <= r && r <= rs[i+1] {
				return true
			}
		}
		return false
	}
	for r := 'a'; r <= 'z'; r++ {
		if in(r) != in(r-'a'+'A') {
			return false
		}
	}
	return true
}

func (c *compiler) compile(re *syntax.Regexp) frag {
	if c.over {
		return frag{}
	}
	ng := re.Flags&syntax.NonGreedy != 0
	switch re.Op {
	case syntax.OpNoMatch:
		return frag{}
	case syntax.OpEmptyMatch:
		return c.nop()
	case syntax.OpLiteral:
		var f frag
		for i, r := range re.Rune {
			l := c.byteRange(r, r)
			if i == 0 {
				f = l
			} else {
				f = c.cat(f, l)
			}
		}
		return f
	case syntax.OpCharClass:
		return c.class(re.Rune)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return c.byteRange(0, maxByte)
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return c.emptyWidth()
	case syntax.OpCapture:
		return c.capture(c.compile(re.Sub[0]))
	case syntax.OpStar:
		return c.star(c.compile(re.Sub[0]), ng)
	case syntax.OpPlus:
		return c.plus(c.compile(re.Sub[0]), ng)
	case syntax.OpQuest:
		return c.quest(c.compile(re.Sub[0]), ng)
	case syntax.OpConcat:
		f := c.compile(re.Sub[0])
		for _, s := range re.Sub[1:] {
			f = c.cat(f, c.compile(s))
		}
		return f
	case syntax.OpAlternate:
		f := c.compile(re.Sub[0])
		for _, s := range re.Sub[1:] {
			f = c.alt(f, c.compile(s))
		}
		return f
	}
	return frag{} // OpRepeat is gone after simplify
}

// prog is a compiled program and its two entries.
type prog struct {
	insts             []inst
	start, unanchored int
}

// optimize is prog.cc Optimize: outs skip Nop chains, and an Alt between
// a .* loop and a match becomes an AltMatch.
func (p *prog) optimize() {
	skip := func(j int) int {
		for j != 0 && p.insts[j].op == opNop {
			j = p.insts[j].out
		}
		return j
	}
	seen := map[int]bool{}
	q := []int{}
	add := func(id int) {
		if id != 0 && !seen[id] {
			seen[id] = true
			q = append(q, id)
		}
	}
	add(p.start)
	for k := 0; k < len(q); k++ {
		in := &p.insts[q[k]]
		in.out = skip(in.out)
		add(in.out)
		if in.op == opAlt {
			in.out1 = skip(in.out1)
			add(in.out1)
		}
	}
	isMatch := func(id int) bool {
		for {
			switch in := p.insts[id]; in.op {
			case opCapture, opNop:
				id = in.out
			case opMatch:
				return true
			default:
				return false
			}
		}
	}
	anyByte := func(id, back int) bool {
		in := p.insts[id]
		return in.op == opByteRange && in.out == back && in.lo == 0 && in.hi == maxByte
	}
	for _, id := range q {
		in := &p.insts[id]
		if in.op == opAlt && (anyByte(in.out, id) && isMatch(in.out1) || isMatch(in.out) && anyByte(in.out1, id)) {
			in.op = opAltMatch
		}
	}
}

// orderedSet is a set that remembers insertion order (RE2's SparseSet
// and SparseArray).
type orderedSet struct {
	has   map[int]bool
	order []int
}

func newSet() *orderedSet { return &orderedSet{has: map[int]bool{}} }

func (s *orderedSet) add(id int) {
	if !s.has[id] {
		s.has[id] = true
		s.order = append(s.order, id)
	}
}

// flatSize is the number of instructions prog.cc Flatten leaves: every
// "root" (an entry, the target of a byte, capture or empty-width
// instruction, or an instruction reached from outside its root's region)
// heads a list of the non-Alt instructions it reaches through Alt and Nop,
// where another root reached counts as one Nop.
func (p *prog) flatSize() int {
	roots := newSet()
	roots.add(0)
	roots.add(p.unanchored)
	roots.add(p.start)
	preds := map[int][]int{}
	reached := newSet()
	stk := []int{p.unanchored}
	for len(stk) > 0 {
		id := stk[len(stk)-1]
		stk = stk[:len(stk)-1]
	loop:
		if reached.has[id] {
			continue
		}
		reached.add(id)
		switch in := p.insts[id]; in.op {
		case opAlt, opAltMatch:
			for _, o := range []int{in.out, in.out1} {
				preds[o] = append(preds[o], id)
			}
			stk = append(stk, in.out1, in.out)
		case opByteRange, opCapture, opEmptyWidth:
			roots.add(in.out)
			id = in.out
			goto loop
		case opNop:
			id = in.out
			goto loop
		}
	}
	sorted := append([]int{}, roots.order...)
	slices.Sort(sorted)
	for i := len(sorted) - 1; i > 0; i-- {
		if id := sorted[i]; id != p.unanchored && id != p.start {
			p.markDominator(id, roots, preds)
		}
	}
	n := 0
	for _, root := range roots.order {
		n += p.listSize(root, roots)
	}
	return n
}

// region is what root reaches through Alt and Nop, stopping at other
// roots (which it includes).
func (p *prog) region(root int, roots *orderedSet) *orderedSet {
	reached := newSet()
	stk := []int{root}
	for len(stk) > 0 {
		id := stk[len(stk)-1]
		stk = stk[:len(stk)-1]
	loop:
		if reached.has[id] {
			continue
		}
		reached.add(id)
		if id != root && roots.has[id] {
			continue
		}
		switch in := p.insts[id]; in.op {
		case opAlt, opAltMatch:
			stk = append(stk, in.out1, in.out)
		case opNop:
			id = in.out
			goto loop
		}
	}
	return reached
}

// markDominator makes a root of every instruction of root's region that
// an Alt outside the region also leads to.
func (p *prog) markDominator(root int, roots *orderedSet, preds map[int][]int) {
	reached := p.region(root, roots)
	for _, id := range reached.order {
		for _, pred := range preds[id] {
			if !reached.has[pred] {
				roots.add(id)
			}
		}
	}
}

// listSize is the length of root's flattened list.
func (p *prog) listSize(root int, roots *orderedSet) int {
	n := 0
	for _, id := range p.region(root, roots).order {
		if id != root && roots.has[id] {
			n++ // a Nop to the other root
			continue
		}
		switch p.insts[id].op {
		case opAltMatch, opByteRange, opCapture, opEmptyWidth, opMatch, opFail:
			n++
		}
	}
	return n
}
