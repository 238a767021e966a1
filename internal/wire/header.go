package wire

// header reads "<kind><decimal>\r\n" at the start of b.
func header(b []byte, kind byte) (int, []byte, bool) {
	if len(b) < 3 || b[0] != kind {
		return 0, b, false
	}
	// One or two digits, most headers, without the loop.
	if len(b) >= 5 {
		d0, d1 := b[1]-'0', b[2]-'0'
		switch {
		case d0 <= 9 && b[2] == '\r' && b[3] == '\n':
			return int(d0), b[4:], true
		case d0 <= 9 && d1 <= 9 && b[3] == '\r' && b[4] == '\n':
			return int(d0)*10 + int(d1), b[5:], true
		}
	}
	v, i := 0, 1
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > 1<<40 {
			return 0, b, false
		}
		v = v*10 + int(b[i]-'0')
	}
	if i == 1 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, b, false
	}
	return v, b[i+2:], true
}
