package bot

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// Defaults of the configuration (action-and-bot.md, "The bot").
const (
	DefaultAddr          = ":8080"
	DefaultSweepInterval = 15 * time.Minute
	DefaultRetention     = 14 * 24 * time.Hour
	DefaultWorkers       = 4
	DefaultQueueSize     = 1000
	DefaultAPIURL        = "https://api.github.com/"
	DefaultServerURL     = "https://github.com"
)

// Config is the bot's configuration, read from its environment by
// ConfigFromEnv. Secrets are never printed: Config has no String method
// that shows them, and LogValue leaves them out.
type Config struct {
	AppID         int64
	PrivateKey    []byte // PEM, PKCS#1 or PKCS#8 RSA
	WebhookSecret []byte
	APIURL        string // REST base, ending in "/" (GitHub Enterprise: https://HOST/api/v3/)
	ServerURL     string // git base: remotes are ServerURL/{owner}/{repo}.git
	Addr          string
	SweepInterval time.Duration
	Retention     time.Duration
	Workers       int
	QueueSize     int
	// LookupEnv is the environment itself, for the providers' own
	// credential variables (VERCEL_TOKEN, NEON_API_KEY, ...), which the
	// adapters read when a teardown needs them.
	LookupEnv func(string) (string, bool)
	// ReceiptKeys sign the receipt branches the bot writes, and only what
	// signed writes recorded is torn down (SPONSON_RECEIPT_KEY, the key the
	// Action has too; SPONSON_RECEIPT_KEY_PREVIOUS during a rotation); nil
	// when unset.
	ReceiptKeys *receipt.Keys
}

// Source is where the configuration comes from: the environment and the
// files its _FILE variables name.
type Source struct {
	LookupEnv func(string) (string, bool)
	ReadFile  func(string) ([]byte, error)
}

// ConfigFromEnv reads the configuration. Every secret may also be given as
// a file (SPONSON_APP_PRIVATE_KEY_FILE, SPONSON_WEBHOOK_SECRET_FILE); both
// at once is refused. Every problem found is reported in one
// CONFIG_INVALID error whose message names each variable (details
// "variables"): a bot that cannot verify webhooks never starts, so a
// missing SPONSON_WEBHOOK_SECRET is always among them.
func ConfigFromEnv(src Source) (Config, error) {
	c := Config{LookupEnv: src.LookupEnv}
	var problems []string
	var names []string
	bad := func(name, format string, args ...any) {
		problems = append(problems, name+" "+fmt.Sprintf(format, args...))
		names = append(names, name)
	}
	get := func(name string) string {
		v, _ := src.LookupEnv(name)
		return strings.TrimSpace(v)
	}
	secret := func(name string) []byte {
		v, inline := src.LookupEnv(name)
		path, file := src.LookupEnv(name + "_FILE")
		switch {
		case inline && v != "" && file && path != "":
			bad(name, "and %s_FILE are both set; set one of them", name)
			return nil
		case file && path != "":
			if src.ReadFile == nil {
				bad(name+"_FILE", "cannot be read here")
				return nil
			}
			b, err := src.ReadFile(path)
			if err != nil {
				bad(name+"_FILE", "names a file that cannot be read (%s)", errText(err))
				return nil
			}
			b = []byte(strings.TrimRight(string(b), "\r\n"))
			if len(b) == 0 {
				bad(name+"_FILE", "names an empty file")
				return nil
			}
			return b
		case v != "":
			return []byte(v)
		}
		return nil
	}

	if v := get("SPONSON_APP_ID"); v == "" {
		bad("SPONSON_APP_ID", "is not set (the App's numeric id, on its settings page)")
	} else if id, err := strconv.ParseInt(v, 10, 64); err != nil || id <= 0 {
		bad("SPONSON_APP_ID", "is %q, not a positive number", v)
	} else {
		c.AppID = id
	}

	if c.PrivateKey = secret("SPONSON_APP_PRIVATE_KEY"); c.PrivateKey == nil {
		if !has(names, "SPONSON_APP_PRIVATE_KEY") && !has(names, "SPONSON_APP_PRIVATE_KEY_FILE") {
			bad("SPONSON_APP_PRIVATE_KEY", "is not set (the App's private key, PEM; or SPONSON_APP_PRIVATE_KEY_FILE)")
		}
	} else if _, err := ParsePrivateKey(c.PrivateKey); err != nil {
		bad("SPONSON_APP_PRIVATE_KEY", "is not an RSA private key in PEM form (%s)", errText(err))
		c.PrivateKey = nil
	}

	if c.WebhookSecret = secret("SPONSON_WEBHOOK_SECRET"); c.WebhookSecret == nil {
		if !has(names, "SPONSON_WEBHOOK_SECRET") && !has(names, "SPONSON_WEBHOOK_SECRET_FILE") {
			bad("SPONSON_WEBHOOK_SECRET", "is not set: the bot refuses to start without a webhook secret (or SPONSON_WEBHOOK_SECRET_FILE)")
		}
	}

	cur, prev := secret(receipt.ReceiptKeyVar), secret(receipt.PreviousReceiptKeyVar)
	if k, err := receipt.NewKeys(string(cur), string(prev)); err != nil {
		bad(receipt.ReceiptKeyVar, "%s", errs.Coded(err).Message)
	} else {
		c.ReceiptKeys = k
	}

	c.APIURL = DefaultAPIURL
	if v := get("GITHUB_API_URL"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("GITHUB_API_URL", "is %q, not an http(s) URL (GitHub Enterprise: https://HOST/api/v3)", v)
		} else {
			c.APIURL = strings.TrimRight(v, "/") + "/"
		}
	}
	c.ServerURL = DefaultServerURL
	if v := get("GITHUB_SERVER_URL"); v != "" {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("GITHUB_SERVER_URL", "is %q, not an http(s) URL (such as https://github.com)", v)
		} else {
			c.ServerURL = strings.TrimRight(v, "/")
		}
	}

	c.Addr = DefaultAddr
	if v := get("SPONSON_ADDR"); v != "" {
		c.Addr = v
	}
	c.SweepInterval = DefaultSweepInterval
	if v := get("SPONSON_SWEEP_INTERVAL"); v != "" {
		if d, err := ParseDuration(v); err != nil || d < time.Minute {
			bad("SPONSON_SWEEP_INTERVAL", "is %q, not a duration of at least 1m (such as 15m)", v)
		} else {
			c.SweepInterval = d
		}
	}
	c.Retention = DefaultRetention
	if v := get("SPONSON_RETENTION"); v != "" {
		if d, err := ParseDuration(v); err != nil || d < 0 {
			bad("SPONSON_RETENTION", "is %q, not a duration (such as 14d or 336h)", v)
		} else {
			c.Retention = d
		}
	}
	c.Workers = DefaultWorkers
	if v := get("SPONSON_WORKERS"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 256 {
			bad("SPONSON_WORKERS", "is %q, not a number from 1 to 256", v)
		} else {
			c.Workers = n
		}
	}
	c.QueueSize = DefaultQueueSize
	if v := get("SPONSON_QUEUE_SIZE"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			bad("SPONSON_QUEUE_SIZE", "is %q, not a positive number", v)
		} else {
			c.QueueSize = n
		}
	}

	if len(problems) > 0 {
		return Config{}, errs.New(errs.CONFIG_INVALID, "the bot's configuration is not valid: %s", strings.Join(problems, "; ")).
			With("variables", names)
	}
	return c, nil
}

// ParseDuration is time.ParseDuration that also takes whole days ("14d").
func ParseDuration(v string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// ParsePrivateKey reads an App private key: PEM, PKCS#1 ("RSA PRIVATE
// KEY", what GitHub hands out) or PKCS#8.
func ParsePrivateKey(pemBytes []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("neither PKCS#1 nor PKCS#8")
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("not an RSA key")
	}
	return rk, nil
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// errText is an error's text without a path that might be long; file
// errors keep their reason only.
func errText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
