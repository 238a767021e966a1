package main

import (
	"strings"
	"unicode"
)

// camel turns a server name ("client|no-evict", "unix-time-seconds",
// "georadius_ro") into an exported Go name ("ClientNoEvict",
// "UnixTimeSeconds", "GeoradiusRo").
func camel(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			b.WriteRune(unicode.ToUpper(r))
			up = false
		} else {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// lowerCamel is camel with a lower-case first letter, for parameters.
func lowerCamel(s string) string {
	c := camel(s)
	if c == "" {
		return c
	}
	return strings.ToLower(c[:1]) + c[1:]
}

var goKeywords = map[string]bool{
	"break": true, "default": true, "func": true, "interface": true, "select": true,
	"case": true, "defer": true, "go": true, "map": true, "struct": true,
	"chan": true, "else": true, "goto": true, "package": true, "switch": true,
	"const": true, "fallthrough": true, "if": true, "range": true, "type": true,
	"continue": true, "for": true, "import": true, "return": true, "var": true,
	// names the generated code uses
	"b": true, "c": true, "x": true, "resp": true, "time": true, "math": true, "strconv": true,
	"len": true, "string": true, "int64": true, "float64": true, "bool": true,
}

// names hands out distinct identifiers.
type names map[string]bool

func (n names) take(base string) string {
	if base == "" {
		base = "arg"
	}
	if goKeywords[base] {
		base += "Arg"
	}
	name := base
	for i := 2; n[name]; i++ {
		name = base + itoa(i)
	}
	n[name] = true
	return name
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// tokenName is the Go name of a token, or "" when the token is not made
// of letters, digits and dashes ("*", "=", "~", "$", "").
func tokenName(tok string) string {
	if tok == "" {
		return ""
	}
	for _, r := range tok {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != ' ' {
			return ""
		}
	}
	return camel(tok)
}
