package bot

import (
	"cmp"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
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
	DefaultIdleWarn      = 24 * time.Hour
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
	// Approvers is SPONSON_APPROVERS_TEAM, "org/team-slug" ("" none).
	Approvers string
	// LookupEnv is the environment itself, for the providers' own
	// credential variables (VERCEL_TOKEN, NEON_API_KEY, ...), which the
	// adapters read when a teardown needs them.
	LookupEnv func(string) (string, bool)
	// CredentialsDir, when set (SPONSON_CREDENTIALS_DIR), holds each
	// repository's provider credentials instead of LookupEnv: dotenv files
	// <owner>/<repo>.env, else <owner>.env (Credentials).
	CredentialsDir string
	// ReceiptKeys sign the receipt branches the bot writes, and only what
	// signed writes recorded is torn down (SPONSON_RECEIPT_KEY, the key the
	// Action has too; SPONSON_RECEIPT_KEY_PREVIOUS during a rotation); nil
	// when unset.
	ReceiptKeys *receipt.Keys
	// IdleTTL, when > 0 (SPONSON_IDLE_TTL), hibernates the preview of an
	// open pull request that has had no push and no apply for that long,
	// unless it carries KeepLabel; IdleWarn (SPONSON_IDLE_WARN) before, the
	// pull request is warned (idle.go).
	IdleTTL  time.Duration
	IdleWarn time.Duration
}

// Source is where the configuration comes from: the environment and the
// files its _FILE variables name.
type Source struct {
	LookupEnv func(string) (string, bool)
	ReadFile  func(string) ([]byte, error)
	// Stat, when set, checks at start that SPONSON_CREDENTIALS_DIR is a
	// directory (nil: not checked).
	Stat func(string) (fs.FileInfo, error)
}

// ConfigFromEnv reads the configuration. Every secret may also be given as
// a file (SPONSON_APP_PRIVATE_KEY_FILE, SPONSON_WEBHOOK_SECRET_FILE); both
// at once is refused. Every problem found is reported in one
// CONFIG_INVALID error whose message names each variable (details
// "variables"): a bot that cannot verify webhooks never starts, so a
// missing SPONSON_WEBHOOK_SECRET is always among them.
func ConfigFromEnv(src Source) (Config, error) {
	r := &envReader{src: src}
	c := Config{LookupEnv: src.LookupEnv}
	c.AppID = r.appID()
	c.PrivateKey, c.WebhookSecret, c.ReceiptKeys = r.secrets()
	c.APIURL = r.url("GITHUB_API_URL", DefaultAPIURL, "GitHub Enterprise: https://HOST/api/v3")
	if c.APIURL != DefaultAPIURL {
		c.APIURL = strings.TrimRight(c.APIURL, "/") + "/"
	}
	c.ServerURL = strings.TrimRight(r.url("GITHUB_SERVER_URL", DefaultServerURL, "such as https://github.com"), "/")
	c.Addr = cmp.Or(r.get("SPONSON_ADDR"), DefaultAddr)
	c.CredentialsDir = r.credentialsDir()
	c.SweepInterval = r.duration("SPONSON_SWEEP_INTERVAL", DefaultSweepInterval, time.Minute, "not a duration of at least 1m (such as 15m)")
	c.Retention = r.duration("SPONSON_RETENTION", DefaultRetention, 0, "not a duration (such as 14d or 336h)")
	c.Workers = r.number("SPONSON_WORKERS", DefaultWorkers, 256, "not a number from 1 to 256")
	c.QueueSize = r.number("SPONSON_QUEUE_SIZE", DefaultQueueSize, 0, "not a positive number")
	c.IdleTTL, c.IdleWarn = r.idle()
	if c.Approvers = r.get("SPONSON_APPROVERS_TEAM"); c.Approvers != "" {
		if org, slug, ok := strings.Cut(c.Approvers, "/"); !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
			r.bad("SPONSON_APPROVERS_TEAM", "is not org/team-slug")
		}
	}
	if len(r.problems) > 0 {
		return Config{}, errs.New(errs.CONFIG_INVALID, "the bot's configuration is not valid: %s", strings.Join(r.problems, "; ")).
			With("variables", r.names)
	}
	return c, nil
}

// envReader reads variables, noting every problem it finds.
type envReader struct {
	src      Source
	problems []string
	names    []string // the variables with a problem
}

func (r *envReader) bad(name, format string, args ...any) {
	r.problems = append(r.problems, name+" "+fmt.Sprintf(format, args...))
	r.names = append(r.names, name)
}

func (r *envReader) get(name string) string {
	v, _ := r.src.LookupEnv(name)
	return strings.TrimSpace(v)
}

// secret is variable name's value, or the content of the file its _FILE
// variable names (nil when neither is set, or on a problem).
func (r *envReader) secret(name string) []byte {
	v, inline := r.src.LookupEnv(name)
	path, file := r.src.LookupEnv(name + "_FILE")
	switch {
	case inline && v != "" && file && path != "":
		r.bad(name, "and %s_FILE are both set; set one of them", name)
		return nil
	case file && path != "":
		return r.secretFile(name+"_FILE", path)
	case v != "":
		return []byte(v)
	}
	return nil
}

func (r *envReader) secretFile(name, path string) []byte {
	if r.src.ReadFile == nil {
		r.bad(name, "cannot be read here")
		return nil
	}
	b, err := r.src.ReadFile(path)
	if err != nil {
		r.bad(name, "names a file that cannot be read (%s)", errText(err))
		return nil
	}
	b = []byte(strings.TrimRight(string(b), "\r\n"))
	if len(b) == 0 {
		r.bad(name, "names an empty file")
		return nil
	}
	return b
}

func (r *envReader) appID() int64 {
	v := r.get("SPONSON_APP_ID")
	if v == "" {
		r.bad("SPONSON_APP_ID", "is not set (the App's numeric id, on its settings page)")
		return 0
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		r.bad("SPONSON_APP_ID", "is %q, not a positive number", v)
		return 0
	}
	return id
}

// secrets reads the App's private key, the webhook secret and the receipt
// keys.
func (r *envReader) secrets() (key, webhook []byte, receiptKeys *receipt.Keys) {
	if key = r.secret("SPONSON_APP_PRIVATE_KEY"); key == nil {
		if !slices.Contains(r.names, "SPONSON_APP_PRIVATE_KEY") && !slices.Contains(r.names, "SPONSON_APP_PRIVATE_KEY_FILE") {
			r.bad("SPONSON_APP_PRIVATE_KEY", "is not set (the App's private key, PEM; or SPONSON_APP_PRIVATE_KEY_FILE)")
		}
	} else if _, err := ParsePrivateKey(key); err != nil {
		r.bad("SPONSON_APP_PRIVATE_KEY", "is not an RSA private key in PEM form (%s)", errText(err))
		key = nil
	}
	if webhook = r.secret("SPONSON_WEBHOOK_SECRET"); webhook == nil {
		if !slices.Contains(r.names, "SPONSON_WEBHOOK_SECRET") && !slices.Contains(r.names, "SPONSON_WEBHOOK_SECRET_FILE") {
			r.bad("SPONSON_WEBHOOK_SECRET", "is not set: the bot refuses to start without a webhook secret (or SPONSON_WEBHOOK_SECRET_FILE)")
		}
	}
	cur, prev := r.secret(receipt.ReceiptKeyVar), r.secret(receipt.PreviousReceiptKeyVar)
	k, err := receipt.NewKeys(string(cur), string(prev))
	if err != nil {
		r.bad(receipt.ReceiptKeyVar, "%s", errs.Coded(err).Message)
	}
	return key, webhook, k
}

// credentialsDir is SPONSON_CREDENTIALS_DIR, a directory when Stat can
// tell.
func (r *envReader) credentialsDir() string {
	dir := r.get(CredentialsDirVar)
	if dir == "" || r.src.Stat == nil {
		return dir
	}
	fi, err := r.src.Stat(dir)
	switch {
	case err != nil:
		r.bad(CredentialsDirVar, "names %q, which cannot be read (%s)", dir, errText(err))
	case !fi.IsDir():
		r.bad(CredentialsDirVar, "names %q, which is not a directory (the files are <owner>/<repo>.env and <owner>.env inside it)", dir)
	}
	return dir
}

// idle reads SPONSON_IDLE_TTL (unset: no idle expiry) and
// SPONSON_IDLE_WARN, which must be shorter than the TTL.
func (r *envReader) idle() (ttl, warn time.Duration) {
	ttl = r.duration("SPONSON_IDLE_TTL", 0, time.Hour, "not a duration of at least 1h (such as 7d or 168h; unset for no idle expiry)")
	warn = r.duration("SPONSON_IDLE_WARN", DefaultIdleWarn, time.Minute, "not a duration of at least 1m (such as 1d or 24h)")
	switch {
	case ttl == 0 || warn < ttl:
	case r.get("SPONSON_IDLE_WARN") == "":
		warn = ttl / 2 // the default day does not fit a TTL of a day or less
	case !slices.Contains(r.names, "SPONSON_IDLE_WARN"):
		r.bad("SPONSON_IDLE_WARN", "is %s, not shorter than SPONSON_IDLE_TTL (%s): the warning must come before the expiry", warn, ttl)
	}
	return ttl, warn
}

// url is an http(s) URL variable (def when unset).
func (r *envReader) url(name, def, example string) string {
	v := r.get(name)
	if v == "" {
		return def
	}
	if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		r.bad(name, "is %q, not an http(s) URL (%s)", v, example)
		return def
	}
	return v
}

// duration is a duration variable of at least least (def when unset).
func (r *envReader) duration(name string, def, least time.Duration, want string) time.Duration {
	v := r.get(name)
	if v == "" {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil || d < least {
		r.bad(name, "is %q, %s", v, want)
		return def
	}
	return d
}

// number is a positive number variable, at most most when most > 0 (def
// when unset).
func (r *envReader) number(name string, def, most int, want string) int {
	v := r.get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || (most > 0 && n > most) {
		r.bad(name, "is %q, %s", v, want)
		return def
	}
	return n
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

// errText is an error's text without a path that might be long; file
// errors keep their reason only.
func errText(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}
