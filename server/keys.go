package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// KeySet is a Keys that holds only the SHA-256 hashes of the API keys it
// was given, each with its tenant. The zero value holds no key.
type KeySet struct {
	hashes map[[sha256.Size]byte]string
}

// HashPrefix marks a key given by its hash in ParseKeys' "TENANT:sha256:HEX"
// form, so that a configuration file need not hold the key itself.
const HashPrefix = "sha256:"

// minKeyLen is the shortest key accepted: shorter ones are guessable.
const minKeyLen = 16

// ParseKeys reads API keys as an operator writes them: each entry is
// "TENANT:KEY", or "TENANT:sha256:HEX" with the hex SHA-256 of the key.
// A tenant is 1 to 64 letters, digits, '.', '_' or '-'; a key is at least
// 16 characters. The same key for two tenants is an error.
func ParseKeys(entries []string) (*KeySet, error) {
	ks := &KeySet{hashes: map[[sha256.Size]byte]string{}}
	for i, e := range entries {
		tenant, secret, ok := strings.Cut(e, ":")
		if !ok || tenant == "" || secret == "" {
			return nil, fmt.Errorf("API key %d: want TENANT:KEY or TENANT:sha256:HEX", i+1)
		}
		if !ValidTenant(tenant) {
			return nil, fmt.Errorf("API key %d: tenant %q: want 1 to 64 letters, digits, '.', '_' or '-'", i+1, tenant)
		}
		var h [sha256.Size]byte
		if hexHash, ok := strings.CutPrefix(secret, HashPrefix); ok {
			b, err := hex.DecodeString(hexHash)
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("API key %d (tenant %s): want sha256: and 64 hex digits", i+1, tenant)
			}
			copy(h[:], b)
		} else {
			if len(secret) < minKeyLen {
				return nil, fmt.Errorf("API key %d (tenant %s): shorter than %d characters", i+1, tenant, minKeyLen)
			}
			h = sha256.Sum256([]byte(secret))
		}
		if other, dup := ks.hashes[h]; dup {
			return nil, fmt.Errorf("API key %d: the same key is given for tenants %s and %s", i+1, other, tenant)
		}
		ks.hashes[h] = tenant
	}
	return ks, nil
}

// HashKey returns entry ("TENANT:KEY") in the form that names the key by
// its hash ("TENANT:sha256:HEX"); an entry already in that form, or one
// that is not an entry, is returned as it is.
func HashKey(entry string) string {
	tenant, secret, ok := strings.Cut(entry, ":")
	if !ok || strings.HasPrefix(secret, HashPrefix) {
		return entry
	}
	h := sha256.Sum256([]byte(secret))
	return tenant + ":" + HashPrefix + hex.EncodeToString(h[:])
}

// Len is the number of keys.
func (k *KeySet) Len() int {
	if k == nil {
		return 0
	}
	return len(k.hashes)
}

// Tenants lists the tenants the keys belong to, each once, sorted.
func (k *KeySet) Tenants() []string {
	if k == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range k.hashes {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// Tenant returns the tenant key belongs to.
func (k *KeySet) Tenant(key string) (string, bool) {
	if k == nil || key == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(key))
	// The lookup is by hash: how long it takes says nothing about how
	// close a guess was to a key.
	t, ok := k.hashes[h]
	return t, ok
}

// ValidTenant reports whether t names a tenant: 1 to 64 letters, digits,
// '.', '_' or '-' (the names session.Manager and the store accept).
func ValidTenant(t string) bool {
	if len(t) == 0 || len(t) > 64 {
		return false
	}
	for _, r := range t {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// ErrNoKeys is returned when a server would accept any request from
// anyone: no API keys, and not opened explicitly for local use.
var ErrNoKeys = errors.New("no API keys configured")

// Auth authenticates the requests of a surface that does it its own way
// (Surface.OwnAuth), as the server does for the others.
type Auth struct {
	Keys Keys
	// InsecureLocal lets a request without a key in as DefaultTenant,
	// and, when no key is configured, every request (see Request).
	InsecureLocal bool
}

// Errors of Auth.Request, each answered 401.
var (
	ErrMissingKey   = errors.New("missing API key: send Authorization: Bearer KEY")
	ErrUnknownKey   = errors.New("unknown API key")
	ErrMalformedKey = errors.New("malformed credentials: send Authorization: Bearer KEY, or X-API-Key: KEY")
)

// Request authenticates r by the credentials it presents (see
// Credentials). A request that presents none is DefaultTenant's with
// InsecureLocal, else ErrMissingKey. With InsecureLocal and no key
// configured at all, every request is DefaultTenant's: there is no key
// a claim could be checked against, and clients such as E2B's SDK insist
// on sending one. Otherwise a request that presents credentials is never
// keyless, even with InsecureLocal: an unknown key is ErrUnknownKey, a
// malformed one (another scheme, an empty token) ErrMalformedKey.
func (a Auth) Request(r *http.Request) (tenant string, err error) {
	key, given := Credentials(r)
	switch {
	case a.InsecureLocal && (!given || !a.hasKeys()):
		return DefaultTenant, nil
	case !given:
		return "", ErrMissingKey
	case key == "":
		return "", ErrMalformedKey
	}
	if a.Keys != nil {
		if t, ok := a.Keys.Tenant(key); ok {
			return t, nil
		}
	}
	return "", ErrUnknownKey
}

// hasKeys reports whether any key is configured.
func (a Auth) hasKeys() bool {
	if a.Keys == nil {
		return false
	}
	if n, ok := a.Keys.(interface{ Len() int }); ok {
		return n.Len() > 0
	}
	return true
}

// Credentials returns the API key r presents ("X-API-Key: KEY", else
// "Authorization: Bearer KEY"), and whether it presents credentials at
// all: given with an empty key means malformed ones (an Authorization of
// another scheme or with an empty token, a header given twice), which
// must not pass for none. An empty X-API-Key is none (what an SDK sends
// when its key is unset).
func Credentials(r *http.Request) (key string, given bool) {
	if k, ok := r.Header["X-Api-Key"]; ok && (len(k) != 1 || strings.TrimSpace(k[0]) != "") {
		if len(k) != 1 {
			return "", true
		}
		return strings.TrimSpace(k[0]), true
	}
	if a, ok := r.Header["Authorization"]; ok {
		if len(a) != 1 {
			return "", true
		}
		scheme, k, _ := strings.Cut(strings.TrimSpace(a[0]), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return "", true
		}
		return strings.TrimSpace(k), true
	}
	return "", false
}
