package noise

import (
	"crypto/rand"
	"encoding/binary"
	mrand "math/rand/v2"
	"sync"
)

// Source is a stream of independent, uniformly distributed 64-bit words. Every sampler
// in dpkit draws its randomness from a Source, so that production code uses a secure one
// (Secure) and tests a reproducible one (Seeded).
type Source interface {
	Uint64() uint64
}

// secureBlock is the number of bytes read from the operating system at a time.
const secureBlock = 4096

// secureSource hands out words from blocks read from crypto/rand.
type secureSource struct {
	mu  sync.Mutex
	buf [secureBlock]byte
	pos int
}

// Secure returns a Source that is safe for concurrent use and reads its bits from the
// operating system's cryptographic generator (crypto/rand), a block at a time. It is the
// default source of every release function in dpkit.
func Secure() Source {
	return &secureSource{pos: secureBlock}
}

func (s *secureSource) Uint64() uint64 {
	s.mu.Lock()
	if s.pos+8 > secureBlock {
		// crypto/rand.Read never returns an error on supported platforms (it panics
		// or blocks instead), as documented from Go 1.24.
		_, _ = rand.Read(s.buf[:])
		s.pos = 0
	}
	v := binary.LittleEndian.Uint64(s.buf[s.pos:])
	s.pos += 8
	s.mu.Unlock()
	return v
}

// Seeded returns a reproducible Source, the ChaCha8 generator of math/rand/v2 keyed by
// seed. It is for tests and simulations; it is not safe for concurrent use, and a release
// whose noise comes from a known seed is not private.
func Seeded(seed uint64) Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return mrand.NewChaCha8(key)
}
