package wire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq-go/resp"
)

// ErrBadArg is resp.ErrBadArg, which Do's argument errors match.
var ErrBadArg = resp.ErrBadArg

// argError names the argument and why.
type argError struct {
	i      int
	reason string
}

func (e *argError) Error() string {
	return fmt.Sprintf("%v: argument %d: %s", ErrBadArg, e.i, e.reason)
}

func (e *argError) Is(target error) bool { return target == ErrBadArg }

// BuildArgs encodes a command given as values into buf's memory: strings
// and []byte as they are; integers in decimal; floats as the server reads
// them ('f' format, shortest exact; "inf" and "-inf"; NaN refused); a
// time.Duration only as the timeout of a command that has one in the
// server's command table (BLPOP's decimal seconds, XREAD BLOCK's
// milliseconds, rounded up), refused elsewhere, where the unit is the
// command's to say (EXPIRE seconds, PEXPIRE milliseconds): pass an
// integer there. Anything else (bools included: servers spell them
// 1/0, yes/no or true/false by command) is refused.
func BuildArgs(buf []byte, args []any) (resp.Cmd, error) {
	if len(args) == 0 {
		return resp.Command(buf), nil
	}
	switch args[0].(type) {
	case string, []byte:
	default:
		return resp.Cmd{}, &argError{0, fmt.Sprintf("the command's name must be a string or []byte, not %T", args[0])}
	}
	b := resp.BuildCommand(buf[:0], len(args))
	var num [32]byte
	var u unit
	unitKnown := false
	for i, a := range args {
		switch v := a.(type) {
		case string:
			b = b.Arg(v)
		case []byte:
			b = b.ArgBytes(v)
		case int:
			b = b.ArgInt(int64(v))
		case int8:
			b = b.ArgInt(int64(v))
		case int16:
			b = b.ArgInt(int64(v))
		case int32:
			b = b.ArgInt(int64(v))
		case int64:
			b = b.ArgInt(v)
		case uint:
			b = b.ArgBytes(strconv.AppendUint(num[:0], uint64(v), 10))
		case uint8:
			b = b.ArgInt(int64(v))
		case uint16:
			b = b.ArgInt(int64(v))
		case uint32:
			b = b.ArgInt(int64(v))
		case uint64:
			b = b.ArgBytes(strconv.AppendUint(num[:0], v, 10))
		case float64:
			f, err := appendFloat(num[:0], v, 64, i)
			if err != nil {
				return resp.Cmd{}, err
			}
			b = b.ArgBytes(f)
		case float32:
			f, err := appendFloat(num[:0], float64(v), 32, i)
			if err != nil {
				return resp.Cmd{}, err
			}
			b = b.ArgBytes(f)
		case time.Duration:
			if !unitKnown {
				u, unitKnown = timeoutUnit(args), true
			}
			d, err := appendDuration(num[:0], v, u, i)
			if err != nil {
				return resp.Cmd{}, err
			}
			b = b.ArgBytes(d)
		default:
			return resp.Cmd{}, &argError{i, fmt.Sprintf("cannot write a %T: pass a string, []byte, an integer, a float or (as a blocking timeout) a time.Duration", a)}
		}
	}
	return b.Cmd(), nil
}

// appendFloat writes f as the server reads a float.
func appendFloat(dst []byte, f float64, bits, i int) ([]byte, error) {
	switch {
	case math.IsNaN(f):
		return nil, &argError{i, "NaN is not a number the server takes"}
	case math.IsInf(f, 1):
		return append(dst, "inf"...), nil
	case math.IsInf(f, -1):
		return append(dst, "-inf"...), nil
	}
	return strconv.AppendFloat(dst, f, 'f', -1, bits), nil
}

// unit is how a command writes its timeout, as cmds.Unit has it (this
// package cannot import cmds: cmds' own tests import conn).
type unit uint8

const (
	noUnit unit = iota
	seconds
	milliseconds
	decimalSeconds
)

// TimeoutUnits are the commands whose timeout has a unit in the server's
// command table (cmds.Info.Timeout; a test keeps the two equal): their
// COMMAND LIST names and the unit, as cmds.Unit numbers it.
var TimeoutUnits = map[string]uint8{
	"blpop": uint8(decimalSeconds), "brpop": uint8(decimalSeconds),
	"brpoplpush": uint8(decimalSeconds), "blmove": uint8(decimalSeconds),
	"blmpop": uint8(decimalSeconds), "bzpopmin": uint8(decimalSeconds),
	"bzpopmax": uint8(decimalSeconds), "bzmpop": uint8(decimalSeconds),
	"xread": uint8(milliseconds), "xreadgroup": uint8(milliseconds),
	"wait": uint8(milliseconds), "waitaof": uint8(milliseconds),
}

// timeoutUnit is the unit of the timeout of the command args name, or
// noUnit.
func timeoutUnit(args []any) unit {
	return unit(TimeoutUnits[strings.ToLower(argText(args[0]))])
}

func argText(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// appendDuration writes d in unit, rounded up.
func appendDuration(dst []byte, d time.Duration, unit unit, i int) ([]byte, error) {
	if d < 0 {
		return nil, &argError{i, "a negative time.Duration is no timeout"}
	}
	ms := ceilDiv(d, time.Millisecond)
	switch unit {
	case seconds:
		return strconv.AppendInt(dst, int64(ceilDiv(d, time.Second)), 10), nil
	case milliseconds:
		return strconv.AppendInt(dst, int64(ms), 10), nil
	case decimalSeconds:
		dst = strconv.AppendInt(dst, int64(ms/1000), 10)
		if frac := int64(ms % 1000); frac != 0 {
			dst = append(dst, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
			for dst[len(dst)-1] == '0' {
				dst = dst[:len(dst)-1]
			}
		}
		return dst, nil
	}
	return nil, &argError{i, "this command takes no time.Duration (its unit is the command's: EXPIRE seconds, PEXPIRE milliseconds…): pass an integer"}
}

// ceilDiv divides d (not negative) by unit, rounding up, without
// overflowing near math.MaxInt64 as d+unit-1 would.
func ceilDiv(d, unit time.Duration) time.Duration {
	q := d / unit
	if d%unit != 0 {
		q++
	}
	return q
}

// Do sends a command given as values (see BuildArgs) and waits for its
// reply, which it returns as a Value that owns its memory. A server error
// reply is returned as the Value and as a *resp.ServerError.
func Do(ctx context.Context, s Sender, args ...any) (resp.Value, error) {
	var buf [512]byte
	cmd, err := BuildArgs(buf[:0], args)
	if err != nil {
		return resp.Value{}, err
	}
	var out resp.Value
	err = DoFunc(ctx, s, cmd, func(v resp.Value) error {
		out = v.Clone()
		return nil
	})
	var se *resp.ServerError
	if errors.As(err, &se) {
		return resp.Value{Type: resp.Error, Str: []byte(se.Msg)}, err
	}
	return out, err
}
