package sentinel_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/echomq/echomq-go/internal/scriptpeer"
)

// lyingSentinel answers GET-MASTER-ADDR-BY-NAME with addr whatever the
// name, refuses HELLO (so clients speak RESP2), and leaves every other
// command unanswered but SENTINEL SENTINELS (none) and PING.
func lyingSentinel(t *testing.T, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return scriptpeer.Listen(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			args, err := scriptpeer.ReadCommand(r)
			if err != nil || len(args) == 0 {
				return
			}
			cmd := strings.ToUpper(args[0])
			if cmd == "SENTINEL" && len(args) > 1 {
				cmd += " " + strings.ToUpper(args[1])
			}
			switch cmd {
			case "HELLO":
				fmt.Fprint(c, "-ERR unknown command 'HELLO'\r\n")
			case "PING":
				fmt.Fprint(c, "+PONG\r\n")
			case "SENTINEL GET-MASTER-ADDR-BY-NAME":
				fmt.Fprintf(c, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(host), host, len(port), port)
			case "SENTINEL SENTINELS":
				fmt.Fprint(c, "*0\r\n")
			}
		}
	})
}
