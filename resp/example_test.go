package resp_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/echomq/echomq-go/resp"
)

func ExampleReader() {
	stream := "+OK\r\n:42\r\n*2\r\n$3\r\nfoo\r\n$-1\r\n%1\r\n+proto\r\n:3\r\n-ERR unknown command\r\n"
	r := resp.NewReader(strings.NewReader(stream))
	for {
		v, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("broken stream:", err)
			return
		}
		fmt.Printf("%s: %s\n", v.Type, v)
	}
	// Output:
	// simple string: OK
	// integer: 42
	// array: [foo (nil)]
	// map: {proto: 3}
	// simple error: (error) ERR unknown command
}

func ExampleAppendCommand() {
	buf := make([]byte, 0, 64)
	buf = resp.AppendCommand(buf, "SET", "greeting", "hello")
	fmt.Printf("%q\n", buf)

	// Arguments that are numbers or bytes, without building strings.
	buf = resp.AppendArrayHeader(buf[:0], 3)
	buf = resp.AppendBulkString(buf, "EXPIRE")
	buf = resp.AppendBulk(buf, []byte("greeting"))
	buf = resp.AppendBulkInt(buf, 60)
	fmt.Printf("%q\n", buf)
	// Output:
	// "*3\r\n$3\r\nSET\r\n$8\r\ngreeting\r\n$5\r\nhello\r\n"
	// "*3\r\n$6\r\nEXPIRE\r\n$8\r\ngreeting\r\n$2\r\n60\r\n"
}

func ExampleArena() {
	r := resp.NewReader(strings.NewReader("*2\r\n$1\r\na\r\n$1\r\nb\r\n*1\r\n$1\r\nc\r\n"))
	var arena resp.Arena

	first, _ := r.Next()
	kept := arena.Retain(first) // outlives the next call to Next

	second, _ := r.Next()
	fmt.Println(kept, second)

	arena.Reset() // kept is invalid from here; the memory is reused
	// Output:
	// [a b] [c]
}

func ExampleParse() {
	b := []byte("$5\r\nhel")
	_, _, err := resp.Parse(b, resp.Limits{})
	fmt.Println(err == resp.ErrIncomplete)

	b = append(b, "lo\r\n:1\r\n"...)
	v, n, err := resp.Parse(b, resp.Limits{})
	fmt.Println(v, n, err)

	_, _, err = resp.Parse([]byte("$-5\r\n"), resp.Limits{})
	fmt.Println(errors.Is(err, resp.ErrProtocol))
	// Output:
	// true
	// hello 11 <nil>
	// true
}

func ExampleIsCode() {
	v, _, _ := resp.Parse([]byte("-NOSCRIPT No matching script.\r\n"), resp.Limits{})
	err := fmt.Errorf("run script: %w", v.Err())
	fmt.Println(resp.IsCode(err, resp.CodeNoScript))
	fmt.Println(err)
	// Output:
	// true
	// run script: NOSCRIPT No matching script.
}
