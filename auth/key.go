// Package auth authenticates API keys and guards the server: one HTTP middleware
// (body limits, bearer keys, rate limits) and one Connect interceptor (roles,
// projects, stream caps, the audit log). Keys are stored only as SHA-256 hashes.
package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
)

// KeyPrefix starts every key, so a leaked one is recognisable (secret scanners,
// logs) and a key is never mistaken for another service's token.
const KeyPrefix = "canon_"

// keyBytes of crypto/rand make a key: 256 bits, beyond guessing, so a plain
// SHA-256 is a safe stored form.
const keyBytes = 32

// visiblePrefixLen is how much of a key lists and audit records show.
const visiblePrefixLen = len(KeyPrefix) + 8

// encodedKeyLen is the length of a well-formed key.
var encodedKeyLen = len(KeyPrefix) + base64.RawURLEncoding.EncodedLen(keyBytes)

// ErrMalformedKey is a bearer token that cannot be a canon key.
var ErrMalformedKey = errors.New("malformed API key")

// NewKey returns a fresh key, its visible prefix and its hash.
func NewKey() (key, prefix string, hash []byte, err error) {
	b := make([]byte, keyBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", nil, err
	}
	key = KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return key, key[:visiblePrefixLen], HashKey(key), nil
}

// HashKey is the stored form of a key.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// ParseBearer reads "Bearer <key>" from an Authorization header value and checks
// the key's shape (not whether it exists). Empty means no credentials.
func ParseBearer(header string) (string, error) {
	if header == "" {
		return "", nil
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New(`authorization must be "Bearer <API key>"`)
	}
	token = strings.TrimSpace(token)
	if !WellFormed(token) {
		return "", ErrMalformedKey
	}
	return token, nil
}

// SendsBearer reports whether an Authorization header value presents a bearer
// key (well-formed or not). Another scheme (a proxy's own Basic credentials,
// passed on) is not canon's to check when keys are not required.
func SendsBearer(header string) bool {
	scheme, _, _ := strings.Cut(strings.TrimSpace(header), " ")
	return strings.EqualFold(scheme, "Bearer")
}

// WellFormed reports whether s has a key's shape: the prefix and 43 base64url characters.
func WellFormed(s string) bool {
	if len(s) != encodedKeyLen || !strings.HasPrefix(s, KeyPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s[len(KeyPrefix):])
	return err == nil && len(b) == keyBytes
}
