package social

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Sealer keeps access tokens out of the database in clear: a token is stored as nonce ||
// AES-256-GCM(token), with the account's network and IG user id as additional data so a sealed
// token copied to another row does not open. The key comes from SOCIAL_TOKEN_KEY (32 bytes,
// base64), which lives in a Secret next to DATABASE_URL and never in the database: a dump of the
// database alone yields no token.
type Sealer struct {
	aead cipher.AEAD
}

// ErrNoTokenKey is returned when a token must be sealed or opened without a key.
var ErrNoTokenKey = errors.New("SOCIAL_TOKEN_KEY is not set: it is needed to store or use access tokens")

// ErrWrongTokenKey is returned when a stored token does not open with the configured key.
var ErrWrongTokenKey = errors.New("cannot open a stored token: SOCIAL_TOKEN_KEY is not the key it was stored with")

// NewSealer reads a base64 key of 32 bytes. An empty key gives a nil Sealer, which refuses to
// seal or open (commands that need no token work without one).
func NewSealer(keyB64 string) (*Sealer, error) {
	keyB64 = strings.TrimSpace(keyB64)
	if keyB64 == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil {
		return nil, fmt.Errorf("SOCIAL_TOKEN_KEY is not base64: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("SOCIAL_TOKEN_KEY must be 32 bytes (base64 of `head -c32 /dev/urandom`), got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("SOCIAL_TOKEN_KEY: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("SOCIAL_TOKEN_KEY: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

func tokenAAD(network, igUserID string) []byte {
	return []byte("social_accounts:" + network + ":" + igUserID)
}

// Seal encrypts token for the account (network, igUserID).
func (s *Sealer) Seal(token, network, igUserID string) ([]byte, error) {
	if s == nil {
		return nil, ErrNoTokenKey
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal token: %w", err)
	}
	return s.aead.Seal(nonce, nonce, []byte(token), tokenAAD(network, igUserID)), nil
}

// Open decrypts a sealed token of the account (network, igUserID).
func (s *Sealer) Open(sealed []byte, network, igUserID string) (string, error) {
	if s == nil {
		return "", ErrNoTokenKey
	}
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", errors.New("sealed token is too short")
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], tokenAAD(network, igUserID))
	if err != nil {
		return "", ErrWrongTokenKey
	}
	return string(plain), nil
}

// Fingerprint names a token without revealing it: the first 12 hex digits of its SHA-256.
func Fingerprint(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:6])
}
