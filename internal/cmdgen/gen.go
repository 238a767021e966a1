package main

import (
	"fmt"
	"sort"
	"strings"
)

// param is one parameter of a generated function.
type param struct {
	Name   string
	Type   string
	Doc    string
	Sample string // a sample value, for the generated tests
}

// method is a generated function: a Builder method starting a command
// (the constructor) or a method of the command's builder type.
type method struct {
	Name   string
	Doc    []string
	Params []param
	Code   []string // body; "B" stands for the Builder
	// Since is the server version that added the argument, when the
	// docs say.
	Since string
	// Servers are the tables whose docs have the argument, when not all
	// the command's tables do.
	Servers []string
}

// enumType is a generated type for a choice among tokens.
type enumType struct {
	Name   string
	Doc    string
	Consts []enumConst
}

type enumConst struct{ Name, Token string }

// structType is a generated type for one element of a repeated block.
type structType struct {
	Name   string
	Fields []param
	sig    string
	enc    []string // encodes "x"
	sample string
}

// cmdOut is a command's generated code.
type cmdOut struct {
	C        *command
	GoName   string // the Builder method
	TypeName string // the builder type
	InfoName string
	Ctor     method
	Methods  []method
	Slots    []string // slot → name, for errors
	Required uint64
	Multi    uint64
	Dep      []int // slot → slot it belongs to, or -1
	// Alt is slot → the alternative of its Dep's choice it belongs to,
	// or -1 (nil: none does); AltName that alternative's token.
	Alt      []int
	AltName  []string
	ReqIf    []int // slot → slot that needs it, or -1
	Timeout  int
	Unit     string
	Kind     []string
	Syntax   string
	Shape    string
	methods  names
	paths    map[string]map[string]bool // table → argument paths its docs have
	sawOpt   bool                       // an option was placed before, at the top
	Deferred int                        // required arguments set aside (B.later)
	KeySpecs string                     // the key specs' literal, or ""
	Proc     string                     // the keys finder, or ""
	Policy   string                     // the Policy constant
	Agg      string                     // the Aggregate constant
}

// serversOf returns the tables whose docs have an argument of a's shape
// (its types and tokens: the docs of the servers name arguments
// differently), nil when all of the command's tables do.
func (o *cmdOut) serversOf(a *argument) []string {
	sig := shapeSig(a)
	var in []string
	for _, f := range o.C.Servers {
		if o.paths[f][sig] {
			in = append(in, f)
		}
	}
	if len(in) == len(o.C.Servers) {
		return nil
	}
	return in
}

// shapeSig is an argument's types and tokens, without names and flags.
func shapeSig(a *argument) string {
	s := a.Type + ":" + a.Token
	if len(a.Arguments) > 0 {
		var parts []string
		for _, c := range a.Arguments {
			parts = append(parts, shapeSig(c))
		}
		s += "(" + strings.Join(parts, ",") + ")"
	}
	return s
}

type gen struct {
	enums   map[string]*enumType // by tokens
	structs map[string]*structType
	types   names // every generated type name
	cmd     *command
	chans   map[string]bool // the names of the command's shard-channel arguments
}

// excluded is a command left out and why.
type excluded struct{ Name, Why string }

func newGen() *gen {
	g := &gen{enums: map[string]*enumType{}, structs: map[string]*structType{}, types: names{}}
	for _, n := range reservedTypes {
		g.types[n] = true
	}
	return g
}

// reservedTypes are the hand-written names of package cmds.
var reservedTypes = []string{"Builder", "Command", "Info", "Kind", "Unit", "Shape", "Z", "Entry",
	"Stream", "PendingSummary", "PendingEntry", "Popped", "ScanPage", "NullString", "NullFloat", "PendingConsumer",
	// kinds, units, shapes, errors
	"ReadOnly", "Write", "Blocking", "ReplyModel", "NoKeys", "MovableKeys", "Admin", "PubSub", "TxMulti", "TxEnd", "TxWatch", "Nondeterministic",
	"NoUnit", "Seconds", "Milliseconds", "DecimalSeconds", "ErrMissing", "ErrAlone", "ErrNotOK", "ErrShape", "Lookup",
	// policies (keyspec.go)
	"Policy", "Aggregate", "ByKeys", "AllShards", "AggFirst", "AggSum", "AggLogicalAnd", "AggLogicalOr", "AggMin", "AggMax", "AggConcat",
	// decoders
	"OK", "OKOrNil", "Status", "Int", "IntOrNil", "Bool", "Bools", "Float", "FloatOrNil", "NullFloats", "String",
	"Strings", "NullStrings", "StringMap", "Scored", "PoppedOrNil", "ScanPageOf", "Entries", "Streams",
	"PendingSummaryOf", "PendingEntries"}

// command generates one command or returns why it cannot.
func (g *gen) command(c *command) (out *cmdOut, err error) {
	defer func() {
		if r := recover(); r != nil {
			if u, ok := r.(unsupported); ok {
				out, err = nil, u
				return
			}
			panic(r)
		}
	}()
	g.cmd = c
	fixTypes(c)
	g.chans = shardChannels(c)
	o := &cmdOut{C: c, GoName: camel(c.Name), Timeout: -1, methods: names{"Build": true}}
	o.TypeName = o.GoName
	if g.types[o.TypeName] {
		o.TypeName += "Cmd"
	}
	g.types[o.TypeName] = true
	o.InfoName = "info" + o.GoName
	o.Ctor = method{Name: o.GoName}
	ctorNames := names{}
	o.paths = map[string]map[string]bool{}
	for _, f := range c.Servers {
		d := c.Doc
		if od := c.Other[f]; od != nil {
			d = od
		}
		o.paths[f] = map[string]bool{}
		var walk func(string, []*argument)
		walk = func(p string, args []*argument) {
			for _, a := range args {
				o.paths[f][shapeSig(a)] = true
				walk(p+"/"+a.Name, a.Arguments)
			}
		}
		walk("", d.Arguments)
	}
	o.place(g, c.Doc.Arguments, -1, "", &o.Ctor, ctorNames, true, "", "")
	o.Syntax = strings.Join(c.Words, " ")
	if s := syntax(c.Doc.Arguments); s != "" {
		o.Syntax += " " + s
	}
	o.Kind = kinds(c)
	if u, ok := timeoutUnit(c); ok && o.Timeout >= 0 {
		o.Unit = u
	}
	o.Shape = replyShape(c.Name)
	return o, nil
}

type unsupported struct{ why string }

func (u unsupported) Error() string { return u.why }

func fail(format string, a ...any) { panic(unsupported{fmt.Sprintf(format, a...)}) }

func (o *cmdOut) slot(name string, dep int) int {
	o.Slots = append(o.Slots, name)
	o.Dep = append(o.Dep, dep)
	o.ReqIf = append(o.ReqIf, -1)
	if len(o.Slots) > 64 {
		fail("more than 64 argument slots")
	}
	return len(o.Slots) - 1
}

// place lays out args at one level: required arguments that one call can
// encode go to head (the constructor, or the method of the block they are
// in), the others to methods of their own.
func (o *cmdOut) place(g *gen, args []*argument, dep int, prefix string, head *method, hn names, top bool, since, path string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		apath := path + "/" + a.Name
		_ = apath
		if isNumkeys(args, i) {
			continue // written from the length of the keys that follow
		}
		auto := i > 0 && isNumkeys(args, i-1)
		if auto {
			// The count is required: so are the keys it counts (maybe none).
			a = required(a)
		}
		switch {
		case !a.optional() && g.simple(a) && !(a.Type == "oneof" && !g.isEnum(a)):
			s := o.slot(a.Name, dep)
			if top {
				o.Required |= 1 << s
			}
			v := g.value(a, hn, !auto)
			head.Params = append(head.Params, v.params...)
			code := []string{fmt.Sprintf("B.open(%d, false)", s)}
			if auto {
				code = append(code, fmt.Sprintf("B.int(int64(len(%s)))", v.params[0].Name))
			}
			code = append(code, v.code...)
			if head == &o.Ctor && o.sawOpt {
				// A required argument after options (ZADD's members,
				// XADD's fields) is encoded at once but set aside, and
				// joins the others after the options given before it:
				// so options given in order keep the arguments in order.
				code[0] = fmt.Sprintf("B.later(%d)", s)
				if o.Deferred++; o.Deferred > 4 {
					fail("more than 4 required arguments after options (cmds.maxLate)")
				}
			}
			head.Code = append(head.Code, code...)
			o.noteTimeout(g, a, s)
		case a.Type == "oneof" && (g.altsSimple(a) || g.altsBlocks(a)):
			if head == &o.Ctor {
				o.sawOpt = true
			}
			s := o.slot(a.Name, dep)
			if !a.optional() {
				if top {
					o.Required |= 1 << s
				} else {
					o.ReqIf[s] = dep
				}
			}
			alts, multi := g.alts(a)
			if multi {
				o.Multi |= 1 << s
			}
			// An alternative that is a block with options of its own
			// (CLUSTER SLOT-STATS's ORDERBY metric [LIMIT n] [ASC|DESC]):
			// its method writes the block's token and leading required
			// arguments into the choice's slot, its options get slots of
			// their own that belong to the choice made with that
			// alternative (Info.alt): every alternative's method notes
			// which was chosen (B.choose), so that an option of one
			// alternative given with another is ErrAlone.
			choose := !g.altsSimple(a)
			if choose && multi {
				fail("argument %q (%s): a repeated choice of blocks with options", a.Name, syntax([]*argument{a}))
			}
			for k, alt := range alts {
				aname := altName(a, alt)
				if fix, ok := nameFixes[g.cmd.Name+"/"+alt.Name]; ok {
					aname = fix
				}
				m := method{Name: o.methods.take(prefix + aname)}
				m.Code = append(m.Code, fmt.Sprintf("B.open(%d, %v)", s, multi))
				if choose {
					m.Code = append(m.Code, fmt.Sprintf("B.choose(%d, %d)", s, k))
				}
				if a.Token != "" {
					m.Code = append(m.Code, tokCode(a.Token))
				}
				m.Doc = append(m.Doc, fmt.Sprintf("%s sets %s: %s.", m.Name, argLabel(a), syntax([]*argument{alt})))
				m.Since = maxSince(since, a.Since, alt.Since)
				m.Servers = o.serversOf(alt)
				o.noteTimeout(g, alt, s)
				if g.simple(alt) {
					v := g.value(alt, names{}, false)
					m.Params = v.params
					m.Code = append(m.Code, v.code...)
					o.Methods = append(o.Methods, m)
					continue
				}
				// A block: its token and leading required arguments here,
				// the rest placed as the options of the alternative.
				m.Code = append(m.Code, tokCode(alt.Token))
				lead := 0
				mn := names{}
				for lead < len(alt.Arguments) && !alt.Arguments[lead].optional() && g.simple(alt.Arguments[lead]) && !isNumkeys(alt.Arguments, lead) {
					v := g.value(alt.Arguments[lead], mn, true)
					m.Params = append(m.Params, v.params...)
					m.Code = append(m.Code, v.code...)
					o.noteTimeout(g, alt.Arguments[lead], s)
					lead++
				}
				for _, rest := range alt.Arguments[lead:] {
					if !rest.optional() {
						fail("argument %q (%s): a required argument after an option in a choice's block", a.Name, syntax([]*argument{a}))
					}
				}
				o.Methods = append(o.Methods, m)
				idx, first := len(o.Methods)-1, len(o.Slots)
				o.place(g, alt.Arguments[lead:], s, prefix+aname, &m, mn, false, m.Since, apath+"/"+alt.Name)
				if len(m.Code) != len(o.Methods[idx].Code) {
					fail("argument %q: a choice's block writes into its head", a.Name)
				}
				for sl := first; sl < len(o.Slots); sl++ {
					if o.Dep[sl] == s {
						o.setAlt(sl, k, alt)
					}
				}
				for j := idx + 1; j < len(o.Methods); j++ {
					if o.Methods[j].Servers == nil {
						o.Methods[j].Servers = m.Servers
					}
				}
			}
		case a.optional() && g.simple(a):
			if head == &o.Ctor {
				o.sawOpt = true
			}
			s := o.slot(a.Name, dep)
			multi := a.multiple() && a.multipleToken()
			if multi {
				o.Multi |= 1 << s
			}
			m := method{Name: o.methods.take(prefix + optName(a))}
			v := g.value(required(a), names{}, false)
			m.Params = v.params
			m.Code = append(m.Code, fmt.Sprintf("B.open(%d, false)", s))
			if auto {
				m.Code = append(m.Code, fmt.Sprintf("B.int(int64(len(%s)))", v.params[0].Name))
			}
			m.Code = append(m.Code, v.code...)
			m.Doc = append(m.Doc, fmt.Sprintf("%s adds %s.", m.Name, syntax([]*argument{a})))
			m.Since = maxSince(since, a.Since)
			m.Servers = o.serversOf(a)
			o.Methods = append(o.Methods, m)
			o.noteTimeout(g, a, s)
		case a.Type == "block" && !a.multiple():
			if head == &o.Ctor && a.optional() {
				o.sawOpt = true
			}
			s := o.slot(a.Name, dep)
			h := head
			hnames := hn
			blockPrefix := prefix + camel(a.Name)
			if a.optional() {
				name := optName(a)
				if fix, ok := nameFixes[g.cmd.Name+"/"+a.Name]; ok {
					name, blockPrefix = fix, prefix+fix
				}
				m := method{Name: o.methods.take(prefix + name)}
				m.Doc = append(m.Doc, fmt.Sprintf("%s adds %s.", m.Name, syntax([]*argument{a})))
				m.Since = maxSince(since, a.Since)
				m.Servers = o.serversOf(a)
				o.Methods = append(o.Methods, m)
				h = &o.Methods[len(o.Methods)-1]
				hnames = names{}
			} else if top {
				o.Required |= 1 << s
			}
			h.Code = append(h.Code, fmt.Sprintf("B.open(%d, false)", s))
			if a.Token != "" {
				h.Code = append(h.Code, tokCode(a.Token))
			}
			// The head method's pointer moves when Methods grows: place
			// the children into a copy and store it back.
			idx := -1
			if a.optional() {
				idx = len(o.Methods) - 1
				cp := o.Methods[idx]
				h = &cp
			}
			o.place(g, a.Arguments, s, blockPrefix, h, hnames, top && !a.optional(), maxSince(since, a.Since), apath)
			if idx >= 0 {
				// Methods placed meanwhile come after; the head keeps its index.
				o.Methods[idx].Params, o.Methods[idx].Code = h.Params, h.Code
				// An option of the block is only where the block is.
				for k := idx + 1; k < len(o.Methods); k++ {
					if o.Methods[k].Servers == nil {
						o.Methods[k].Servers = o.Methods[idx].Servers
					}
				}
			}
		default:
			fail("argument %q (%s) has a shape the generator does not handle", a.Name, syntax([]*argument{a}))
		}
	}
}

// setAlt ties slot to alternative k (alt) of the choice it depends on.
func (o *cmdOut) setAlt(slot, k int, alt *argument) {
	for len(o.Alt) < len(o.Slots) {
		o.Alt = append(o.Alt, -1)
		o.AltName = append(o.AltName, "")
	}
	o.Alt[slot], o.AltName[slot] = k, alt.Token
}

func (o *cmdOut) noteTimeout(g *gen, a *argument, slot int) {
	if isTimeoutArg(g.cmd, a) {
		o.Timeout = slot
	}
}

// isNumkeys reports whether args[i] is a count of the keys that follow,
// which the builder writes itself.
func isNumkeys(args []*argument, i int) bool {
	a := args[i]
	if a.Name != "numkeys" || a.Type != "integer" || a.optional() || i+1 >= len(args) {
		return false
	}
	n := args[i+1]
	return n.multiple() && n.Type == "key" && n.Token == ""
}

func tokCode(tok string) string {
	if tok == "" {
		return `B.str("")`
	}
	return fmt.Sprintf("B.tok(%q)", tok)
}

// optName is the method name of an optional argument.
func optName(a *argument) string {
	if n := tokenName(a.Token); n != "" {
		return n
	}
	if a.Token == "" && a.Type == "block" && len(a.Arguments) > 0 && !a.Arguments[0].optional() {
		if n := tokenName(a.Arguments[0].Token); n != "" {
			return n
		}
	}
	return camel(a.Name)
}

// altName is the method name of one alternative of a oneof.
func altName(oneof, alt *argument) string {
	n := optName(alt)
	if p := tokenName(oneof.Token); p != "" {
		n = p + n
	}
	return n
}

func argLabel(a *argument) string {
	if a.Token != "" {
		return a.Token
	}
	return a.Name
}

func isScalar(a *argument) bool {
	switch a.Type {
	case "key", "string", "pattern", "integer", "double", "unix-time":
		return true
	}
	return false
}

// isEnum: a oneof of pure tokens.
func (g *gen) isEnum(a *argument) bool {
	if a.Type != "oneof" || a.multiple() || len(a.Arguments) == 0 {
		return false
	}
	for _, c := range a.Arguments {
		if c.Type != "pure-token" || c.optional() || c.multiple() {
			return false
		}
	}
	return true
}

// simple reports whether one call's parameters can encode a.
func (g *gen) simple(a *argument) bool {
	switch {
	case isScalar(a), a.Type == "pure-token":
		return true
	case g.isEnum(a):
		return true
	case a.Type == "block":
		for _, c := range a.Arguments {
			if a.multiple() {
				if !(isScalar(c) || g.isEnum(c) || c.Type == "pure-token") || c.multiple() || (c.optional() && c.Type != "pure-token") {
					return false
				}
				continue
			}
			if c.optional() && !(c.Type == "pure-token" || g.isEnum(c)) {
				return false
			}
			if c.multiple() && !isScalar(c) {
				return false
			}
			if !g.simple(c) {
				return false
			}
		}
		return true
	}
	return false
}

// altsBlocks reports whether the alternatives of a oneof are simple or,
// for a choice made once, blocks with a token whose leading required
// arguments are simple, their options after them (CLUSTER SLOT-STATS's
// ORDERBY metric [LIMIT limit] [ASC | DESC]).
func (g *gen) altsBlocks(a *argument) bool {
	if a.multiple() {
		return false
	}
	alts, multi := g.alts(a)
	if multi {
		return false
	}
	for _, alt := range alts {
		if g.simple(alt) {
			continue
		}
		if alt.Type != "block" || alt.multiple() || alt.Token == "" || tokenName(alt.Token) == "" {
			return false
		}
	}
	return true
}

func (g *gen) altsSimple(a *argument) bool {
	alts, _ := g.alts(a)
	for _, alt := range alts {
		if !g.simple(alt) {
			return false
		}
	}
	return true
}

// alts returns the alternatives of a oneof, with the alternatives of a
// oneof among them in its place, and, in a repeated oneof, the parts of a
// block without a token, each an alternative of its own (BITFIELD's
// [OVERFLOW …] <SET … | INCRBY …>): a repeated oneof's methods append in
// the order they are called. multi reports whether a repeated oneof is
// among them. An alternative's "optional" flag means nothing in a oneof
// and is dropped.
func (g *gen) alts(a *argument) (alts []*argument, multi bool) {
	multi = a.multiple()
	for _, alt := range a.Arguments {
		switch {
		case alt.Type == "oneof" && !g.isEnum(alt):
			sub, m := g.alts(alt)
			alts = append(alts, sub...)
			multi = multi || m
		case multi && alt.Type == "block" && alt.Token == "" && !g.simple(alt):
			for _, c := range alt.Arguments {
				if c.Type == "oneof" && !g.isEnum(c) {
					sub, _ := g.alts(c)
					alts = append(alts, sub...)
				} else {
					alts = append(alts, required(c))
				}
			}
		default:
			alts = append(alts, required(alt))
		}
	}
	return alts, multi
}

// required returns a without its optional flag.
func required(a *argument) *argument {
	if !a.optional() {
		return a
	}
	c := *a
	c.Flags = nil
	for _, f := range a.Flags {
		if f != "optional" {
			c.Flags = append(c.Flags, f)
		}
	}
	return &c
}

// value is the parameters of an argument and the code that encodes them.
type value struct {
	params []param
	code   []string
}

// value returns a's parameters (named from hn) and the code writing it.
// Multiple values take a slice; the caller makes the last one variadic.
func (g *gen) value(a *argument, hn names, required bool) value {
	var v value
	switch {
	case a.Type == "pure-token":
		if a.optional() {
			p := param{Name: hn.take(lowerCamel(a.Name)), Type: "bool", Doc: "adds " + a.Token, Sample: "true"}
			v.params = append(v.params, p)
			v.code = append(v.code, fmt.Sprintf("if %s {", p.Name), tokCode(a.Token), "}")
			return v
		}
		v.code = append(v.code, tokCode(a.Token))
	case isScalar(a):
		typ, enc := g.scalar(a)
		p := param{Name: hn.take(lowerCamel(a.Name)), Type: typ, Doc: scalarDoc(a, typ)}
		p.Sample = sampleOf(typ, a, len(hn))
		if a.multiple() {
			p.Type = "[]" + typ
			p.Sample = p.Type + "{" + p.Sample + "}"
			if required && !a.optional() {
				// One or more: none is an error, not a command the
				// server refuses.
				v.code = append(v.code, fmt.Sprintf("if len(%s) == 0 {", p.Name), fmt.Sprintf("B.none(%q)", a.Name), "}")
			}
			if a.Token != "" && !a.multipleToken() {
				v.code = append(v.code, tokCode(a.Token))
			}
			v.code = append(v.code, fmt.Sprintf("for _, x := range %s {", p.Name))
			if a.multipleToken() {
				v.code = append(v.code, tokCode(a.Token))
			}
			v.code = append(v.code, enc("x"), "}")
		} else {
			if a.Token != "" {
				v.code = append(v.code, tokCode(a.Token))
			}
			v.code = append(v.code, enc(p.Name))
		}
		v.params = append(v.params, p)
	case g.isEnum(a):
		e := g.enum(a)
		p := param{Name: hn.take(lowerCamel(a.Name)), Type: e.Name, Doc: "one of the " + e.Name + " constants", Sample: e.Consts[0].Name}
		if a.Token != "" {
			if a.optional() {
				v.code = append(v.code, fmt.Sprintf("if %s != 0 {", p.Name))
			}
			v.code = append(v.code, tokCode(a.Token))
			if a.optional() {
				v.code = append(v.code, "}")
			}
		}
		if a.optional() {
			v.code = append(v.code, fmt.Sprintf("if %s != 0 {", p.Name), fmt.Sprintf("B.enum(%s.token(), %q)", p.Name, a.Name), "}")
			p.Doc += " (0 for none)"
		} else {
			v.code = append(v.code, fmt.Sprintf("B.enum(%s.token(), %q)", p.Name, a.Name))
		}
		v.params = append(v.params, p)
	case a.Type == "block" && a.multiple():
		st := g.structOf(a)
		p := param{Name: hn.take(lowerCamel(a.Name)), Type: "[]" + st.Name, Doc: "one or more " + st.Name, Sample: "[]" + st.Name + "{" + st.sample + "}"}
		if required && !a.optional() {
			v.code = append(v.code, fmt.Sprintf("if len(%s) == 0 {", p.Name), fmt.Sprintf("B.none(%q)", a.Name), "}")
		}
		if a.Token != "" && !a.multipleToken() {
			v.code = append(v.code, tokCode(a.Token))
		}
		v.code = append(v.code, fmt.Sprintf("for _, x := range %s {", p.Name))
		if a.multipleToken() {
			v.code = append(v.code, tokCode(a.Token))
		}
		v.code = append(v.code, st.enc...)
		v.code = append(v.code, "}")
		v.params = append(v.params, p)
	case a.Type == "block":
		if a.Token != "" {
			v.code = append(v.code, tokCode(a.Token))
		}
		for _, c := range a.Arguments {
			cv := g.value(c, hn, required)
			v.params = append(v.params, cv.params...)
			v.code = append(v.code, cv.code...)
		}
	default:
		fail("argument %q of type %s", a.Name, a.Type)
	}
	return v
}

// scalar returns the Go type of a scalar argument and its encoder.
func (g *gen) scalar(a *argument) (string, func(string) string) {
	if u, ok := durationUnit(g.cmd, a); ok {
		f := "dur"
		if isTimeoutArg(g.cmd, a) {
			f = "timeoutDur"
		}
		return "time.Duration", func(x string) string { return fmt.Sprintf("B.%s(%s, %s)", f, x, u) }
	}
	switch a.Type {
	case "key":
		return "string", func(x string) string { return "B.key(" + x + ")" }
	case "string", "pattern":
		if g.chans[a.Name] {
			return "string", func(x string) string { return "B.channel(" + x + ")" }
		}
		return "string", func(x string) string { return "B.str(" + x + ")" }
	case "integer":
		return "int64", func(x string) string { return "B.int(" + x + ")" }
	case "double":
		if a.Name == "min" || a.Name == "max" {
			// a score bound: "-inf", "(1.5" (exclusive) are bounds too
			return "string", func(x string) string { return "B.str(" + x + ")" }
		}
		return "float64", func(x string) string { return "B.float(" + x + ")" }
	case "unix-time":
		milli := strings.Contains(a.Name, "milli")
		return "time.Time", func(x string) string { return fmt.Sprintf("B.unix(%s, %v)", x, milli) }
	}
	fail("scalar type %s", a.Type)
	return "", nil
}

func scalarDoc(a *argument, typ string) string {
	switch typ {
	case "time.Duration":
		if u, ok := durationUnit(nil, a); ok {
			_ = u
		}
		return "a duration"
	case "time.Time":
		return "a point in time"
	}
	if a.Type == "key" {
		return "a key"
	}
	return ""
}

// enum returns the enum type of a oneof of tokens, shared by every oneof
// of the same tokens.
func (g *gen) enum(a *argument) *enumType {
	var toks []string
	for _, c := range a.Arguments {
		toks = append(toks, c.Token)
	}
	k := strings.Join(toks, ",")
	if e := g.enums[k]; e != nil {
		return e
	}
	e := &enumType{}
	if kn, ok := knownEnums[k]; ok {
		e.Name = kn.name
		for i, t := range toks {
			e.Consts = append(e.Consts, enumConst{Name: kn.consts[i], Token: t})
		}
	} else {
		e.Name = camel(g.cmd.Name) + camel(a.Name)
		for _, c := range a.Arguments {
			e.Consts = append(e.Consts, enumConst{Name: e.Name + camel(c.Name), Token: c.Token})
		}
	}
	if g.types[e.Name] {
		fail("enum name %s taken", e.Name)
	}
	g.types[e.Name] = true
	for _, c := range e.Consts {
		if g.types[c.Name] {
			fail("enum constant %s taken", c.Name)
		}
		g.types[c.Name] = true
	}
	e.Doc = fmt.Sprintf("%s is one of %s.", e.Name, strings.Join(toks, ", "))
	g.enums[k] = e
	return e
}

var knownEnums = map[string]struct {
	name   string
	consts []string
}{
	"LEFT,RIGHT":           {"Side", []string{"Left", "Right"}},
	"BEFORE,AFTER":         {"Where", []string{"Before", "After"}},
	"MIN,MAX":              {"MinMax", []string{"Min", "Max"}},
	"M,KM,FT,MI":           {"GeoUnit", []string{"Meters", "Kilometers", "Feet", "Miles"}},
	"AND,OR,XOR,NOT":       {"BitOperation", []string{"And", "Or", "Xor", "Not"}},
	"YES,NO":               {"YesNo", []string{"Yes", "No"}},
	"ON,OFF":               {"OnOff", []string{"On", "Off"}},
	"ON,OFF,SKIP":          {"ReplyMode", []string{"ReplyOn", "ReplyOff", "ReplySkip"}},
	"YES,SYNC,NO":          {"DebugMode", []string{"DebugYes", "DebugSync", "DebugNo"}},
	"ASC,DESC":             {"Order", []string{"Asc", "Desc"}},
	"MAXLEN,MINID":         {"TrimStrategy", []string{"MaxLen", "MinID"}},
	"=,~":                  {"TrimOperator", []string{"Exact", "Approx"}},
	"WRAP,SAT,FAIL":        {"Overflow", []string{"Wrap", "Sat", "Fail"}},
	"BYTE,BIT":             {"BitUnit", []string{"Byte", "Bit"}},
	"SUM,MIN,MAX":          {"Aggregate", []string{"Sum", "AggMin", "AggMax"}},
	"NX,XX":                {"Condition", []string{"IfNotExists", "IfExists"}},
	"GT,LT":                {"Comparison", []string{"IfGreater", "IfLess"}},
	"NO,ONE":               {"NoOne", []string{"NoOneToken"}},
	"FLUSH,APPEND,REPLACE": {"RestorePolicy", []string{"Flush", "Append", "Replace"}},
	"ASYNC,SYNC":           {"FlushMode", []string{"Async", "Sync"}},
}

// structOf returns the element type of a repeated block, named after its
// fields ("FieldValue", "ScoreMember") and shared by every block of the
// same fields.
func (g *gen) structOf(a *argument) *structType {
	st := &structType{}
	var sig, name []string
	fn := names{}
	var sample []string
	for _, c := range a.Arguments {
		if c.Type == "pure-token" {
			st.enc = append(st.enc, tokCode(c.Token))
			sig = append(sig, c.Token)
			continue
		}
		var typ string
		var enc string
		fname := camel(c.Name)
		if fn[fname] {
			fail("block %q repeats field %s", a.Name, fname)
		}
		fn[fname] = true
		if g.isEnum(c) {
			e := g.enum(c)
			typ = e.Name
			enc = fmt.Sprintf("B.enum(x.%s.token(), %q)", fname, c.Name)
			sample = append(sample, fmt.Sprintf("%s: %s", fname, e.Consts[0].Name))
		} else {
			t, f := g.scalar(c)
			typ = t
			enc = f("x." + fname)
			sample = append(sample, fmt.Sprintf("%s: %s", fname, sampleOf(t, c, 1)))
		}
		if c.Token != "" {
			st.enc = append(st.enc, tokCode(c.Token))
		}
		st.enc = append(st.enc, enc)
		st.Fields = append(st.Fields, param{Name: fname, Type: typ, Doc: scalarDoc(c, typ)})
		sig = append(sig, fname+" "+typ)
		name = append(name, fname)
	}
	st.Name = strings.Join(name, "")
	st.sig = strings.Join(sig, ";")
	st.sample = st.Name + "{" + strings.Join(sample, ", ") + "}"
	if old := g.structs[st.Name]; old != nil {
		if old.sig == st.sig {
			return old
		}
		st.Name = camel(g.cmd.Name) + st.Name
		st.sample = st.Name + st.sample[strings.Index(st.sample, "{"):]
	}
	if g.types[st.Name] {
		fail("struct name %s taken", st.Name)
	}
	g.types[st.Name] = true
	g.structs[st.Name] = st
	return st
}

// syntax renders arguments the way the command pages write them.
func syntax(args []*argument) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, syntax1(a))
	}
	return strings.Join(parts, " ")
}

func syntax1(a *argument) string {
	var s string
	switch a.Type {
	case "pure-token":
		s = a.Token
		if s == "" {
			s = `""`
		}
	case "oneof":
		var alts []string
		for _, c := range a.Arguments {
			alts = append(alts, syntax1(c))
		}
		s = strings.Join(alts, " | ")
		if !a.optional() {
			s = "<" + s + ">"
		}
		if a.Token != "" {
			s = a.Token + " " + s
		}
	case "block":
		s = syntax(a.Arguments)
		if a.Token != "" {
			s = a.Token + " " + s
		}
	default:
		s = a.Display
		if s == "" {
			s = a.Name
		}
		if a.Token != "" {
			s = a.Token + " " + s
		}
	}
	if a.multiple() {
		inner := s
		if a.Type == "oneof" && !a.optional() {
			inner = strings.TrimSuffix(strings.TrimPrefix(s, "<"), ">")
		}
		if a.multipleToken() || a.Token == "" {
			s = s + " [" + inner + " ...]"
		} else {
			s = s + " [" + strings.TrimPrefix(inner, a.Token+" ") + " ...]"
		}
	}
	if a.optional() {
		s = "[" + s + "]"
	}
	return s
}

// generate returns the generated commands, enums and structs, and what
// was left out.
func generate(cs []*command) (*gen, []*cmdOut, []excluded) {
	g := newGen()
	var outs []*cmdOut
	var ex []excluded
	for _, c := range cs {
		if c.Container {
			continue
		}
		if why, ok := leaveOut[c.Name]; ok {
			ex = append(ex, excluded{c.Name, why})
			continue
		}
		o, err := g.command(c)
		if err != nil {
			ex = append(ex, excluded{c.Name, err.Error()})
			continue
		}
		outs = append(outs, o)
	}
	sort.Slice(ex, func(i, j int) bool { return ex[i].Name < ex[j].Name })
	return g, outs, ex
}

// maxSince returns the latest of versions ("6.2.0"), "" for none.
func maxSince(vs ...string) string {
	best := ""
	for _, v := range vs {
		if v != "" && (best == "" || versionLess(best, v)) {
			best = v
		}
	}
	return best
}

// versionLess compares dotted versions numerically.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		var x, y int
		if i < len(pa) {
			fmt.Sscan(pa[i], &x)
		}
		if i < len(pb) {
			fmt.Sscan(pb[i], &y)
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// shardChannels returns the arguments a "not_key" key spec points at (the
// shard channels of SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE): the docs tie no
// argument to such a spec, so its begin index finds it, among leading
// arguments of fixed width.
func shardChannels(c *command) map[string]bool {
	out := map[string]bool{}
	for _, ks := range c.Info.KeySpecs {
		notKey := false
		for _, f := range ks.Flags {
			notKey = notKey || f == "not_key"
		}
		if !notKey || ks.BeginSearch.Type != "index" {
			continue
		}
		idx, _ := ks.BeginSearch.Spec["index"].(float64)
		pos := len(c.Words)
		for _, a := range c.Doc.Arguments {
			if pos == int(idx) {
				if a.Type == "string" && a.Token == "" {
					out[a.Name] = true
				}
				break
			}
			if a.optional() || a.multiple() || !isScalar(a) || a.Token != "" {
				break
			}
			pos++
		}
	}
	return out
}
