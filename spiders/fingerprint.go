package spiders

import (
	"crypto/sha256"
	"hash"
	"strings"
)

// FingerprintSize is the length in bytes of a request fingerprint.
const FingerprintSize = 16

// Fingerprint identifies a request for duplicate filtering: the first FingerprintSize
// bytes of SHA-256 over the upper-cased method, a NUL byte, CanonicalURL(rawURL), a NUL
// byte and the body. Equivalent URLs (see CanonicalURL) give equal fingerprints.
// It returns the error of CanonicalURL for a URL that cannot be fetched.
func Fingerprint(method, rawURL string, body []byte) ([FingerprintSize]byte, error) {
	var fp [FingerprintSize]byte
	canon, err := CanonicalURL(rawURL)
	if err != nil {
		return fp, err
	}
	return fingerprintOf(method, canon, body, nil), nil
}

// fingerprintOf is the fingerprint of a request whose URL is already canonical: the
// first FingerprintSize bytes of SHA-256 over the upper-cased method, a NUL byte, canon,
// a NUL byte, the body, then what more writes (nil: nothing; fingerprint rules add the
// headers they name).
func fingerprintOf(method, canon string, body []byte, more func(h hash.Hash)) [FingerprintSize]byte {
	// The layout goes in a buffer on the stack (most requests: a short method and URL, no
	// body; strings.ToUpper returns an upper-case method as it is) and is summed at once:
	// no hash.Hash allocated per link unless more writes after it.
	var stack [512]byte
	b := append(stack[:0], strings.ToUpper(method)...)
	b = append(b, 0)
	b = append(b, canon...)
	b = append(b, 0)
	b = append(b, body...)
	var sum [sha256.Size]byte
	if more == nil {
		sum = sha256.Sum256(b)
	} else {
		h := sha256.New()
		h.Write(b)
		more(h)
		h.Sum(sum[:0])
	}
	return [FingerprintSize]byte(sum[:FingerprintSize])
}
