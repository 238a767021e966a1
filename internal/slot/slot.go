// Package slot computes cluster hash slots: CRC16-XMODEM of a key's
// hashtag, mod 16384, as Valkey and Redis Cluster do.
package slot

// Count is the number of cluster hash slots.
const Count = 16384

// Hashtag returns the part of key a cluster hashes: the bytes inside the
// first '{' and the first '}' after it, when there is such a pair and the
// bytes between are not empty; otherwise the whole key.
func Hashtag[T string | []byte](key T) T {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

// Of returns the slot of key. Of("123456789") == 12739.
func Of[T string | []byte](key T) uint16 {
	tag := Hashtag(key)
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^tag[i]]
	}
	return crc & (Count - 1)
}

// crc16tab is the CRC16-XMODEM table: polynomial 0x1021, initial value 0,
// no reflection, no final xor.
var crc16tab = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()
