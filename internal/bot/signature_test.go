package bot

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// The signature of real deliveries, checked by go-github: each way a
// delivery can fail keeps its own error (the webhook's message), and an
// algorithm go-github would take but the bot refuses is refused.
func TestVerifySignatureOnRealPayloads(t *testing.T) {
	sha512Sig := func(body []byte) string {
		m := hmac.New(sha512.New, testSecret)
		m.Write(body)
		return "sha512=" + hex.EncodeToString(m.Sum(nil))
	}
	for _, f := range []string{"pull_request/opened.payload.json", "push/with-installation.payload.json", "installation/created.payload.json", "ping/payload.json"} {
		body := fixture(t, f)
		good := Sign(testSecret, body)
		cases := []struct {
			name         string
			body         []byte
			sig256, sig1 string
			want         error
		}{
			{"genuine", body, good, "", nil},
			{"genuine, upper-case hex", body, "sha256=" + strings.ToUpper(strings.TrimPrefix(good, "sha256=")), "", nil},
			{"no signature", body, "", "", ErrNoSignature},
			{"SHA-1 only", body, "", sha1Sig(body), ErrSHA1Only},
			{"another body", body[:len(body)-1], good, "", ErrBadSignature},
			{"another secret", body, Sign([]byte("another secret"), body), "", ErrBadSignature},
			{"SHA-1 in the SHA-256 header", body, sha1Sig(body), "", ErrSignatureForm},
			{"SHA-512 in the SHA-256 header", body, sha512Sig(body), "", ErrSignatureForm},
			{"short", body, good[:len(good)-2], "", ErrSignatureForm},
			{"not hex", body, "sha256=" + strings.Repeat("zz", 32), "", ErrSignatureForm},
			{"no prefix", body, strings.TrimPrefix(good, "sha256="), "", ErrSignatureForm},
		}
		for _, c := range cases {
			if err := VerifySignature(testSecret, c.body, c.sig256, c.sig1); !errors.Is(err, c.want) {
				t.Errorf("%s, %s: %v, want %v", f, c.name, err, c.want)
			}
		}
	}
}
