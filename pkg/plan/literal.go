package plan

import (
	"regexp"
	"slices"
	"strings"
)

// secretSuffixes end the names of parameters that hold secrets. A literal
// under such a name is SECRET_LITERAL. Compared in upper case.
var secretSuffixes = []string{"_KEY", "_SECRET", "_TOKEN", "PASSWORD", "_PASS", "PASSWD", "PRIVATE_KEY"}

// secretName reports whether a parameter name says it holds a secret.
func secretName(name string) bool {
	up := strings.ToUpper(name)
	return slices.ContainsFunc(secretSuffixes, func(s string) bool { return strings.HasSuffix(up, s) })
}

// credential is a known credential format. prefixes are cheap substrings
// one of which every match contains; the regexp runs only when one is
// present, so checking a plan's literals costs next to nothing.
type credential struct {
	what     string
	prefixes []string
	re       *regexp.Regexp
}

// credentials are the formats refused anywhere in a plan. Lengths and
// alphabets follow the issuers' published formats, so that ordinary text
// ("sk_live_ keys are refused") does not match.
var credentials = []credential{
	{"a GitHub token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"},
		regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36}\b`)},
	{"a GitHub fine-grained token", []string{"github_pat_"},
		regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b`)},
	{"a Stripe secret key", []string{"sk_live_", "rk_live_", "sk_test_", "rk_test_"},
		regexp.MustCompile(`\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}`)},
	{"a Stripe webhook secret", []string{"whsec_"},
		regexp.MustCompile(`\bwhsec_[A-Za-z0-9+/=]{24,}`)},
	{"an AWS access key id", []string{"AKIA", "ASIA"},
		regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`)},
	{"a Slack token", []string{"xox"},
		regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"a Slack webhook URL", []string{"hooks.slack.com/services/"},
		regexp.MustCompile(`hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{8,}`)},
	{"a PEM private key", []string{"PRIVATE KEY-----"},
		regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----`)},
	{"a JSON Web Token", []string{"eyJ"},
		regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*`)},
	{"a Google API key", []string{"AIza"},
		regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}(?:[^0-9A-Za-z_-]|$)`)},
	{"a GitLab token", []string{"glpat-"},
		regexp.MustCompile(`\bglpat-[0-9A-Za-z_-]{20,}`)},
	{"an npm token", []string{"npm_"},
		regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"an OpenAI API key", []string{"sk-"},
		regexp.MustCompile(`\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})`)},
	{"an Anthropic API key", []string{"sk-ant-"},
		regexp.MustCompile(`\bsk-ant-[a-z0-9]+-[A-Za-z0-9_-]{40,}`)},
	{"a SendGrid API key", []string{"SG."},
		regexp.MustCompile(`\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`)},
	{"a Supabase secret key", []string{"sb_secret_"},
		regexp.MustCompile(`\bsb_secret_[A-Za-z0-9_-]{20,}`)},
}

// urlPassword reports whether s holds a URL whose user info has a password
// ("postgres://app:pw@host/db"), which is a credential whatever the key.
// Hand-written: URLs are the most common literals, and this runs on each.
func urlPassword(s string) bool {
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			return false
		}
		s = s[i+3:]
		auth := s
		if j := strings.IndexAny(auth, "/?# \t\n"); j >= 0 {
			auth = auth[:j]
		}
		at := strings.LastIndexByte(auth, '@')
		if at <= 0 || at == len(auth)-1 {
			continue
		}
		if c := strings.IndexByte(auth[:at], ':'); c >= 0 && c < at-1 && !strings.HasPrefix(auth[c+1:], "${") {
			return true
		}
	}
}

// credentialFormat returns what s looks like when it contains a known
// credential, or "".
func credentialFormat(s string) string {
	if len(s) < 8 {
		return "" // shorter than every format
	}
	if urlPassword(s) {
		return "a URL with a password"
	}
	for _, c := range credentials {
		for _, p := range c.prefixes {
			if strings.Contains(s, p) {
				if c.re.MatchString(s) {
					return c.what
				}
				break
			}
		}
	}
	return ""
}

// displayText matches what Sponson prints in place of a value it does not
// show: "(pending ← db.connection_string)", "(secret ← env://X)", "(kept)",
// with "<-" for "←" too.
var displayText = regexp.MustCompile(`^\(\s*(pending|secret|sensitive|kept|keep)\s*(?:(?:←|<-)\s*(.*?))?\s*\)$`)

// refPattern is the operand of from.
var refPattern = regexp.MustCompile(`^([a-z][a-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_-]*)$`)

// secretRefPattern is the operand of secret.
var secretRefPattern = regexp.MustCompile(`^[a-z][a-z0-9+.-]*://\S.*$`)

// pasted returns the value form a pasted display text stands for, or "" when
// s is not display text.
func pasted(s string) (form string, ok bool) {
	if !strings.HasPrefix(strings.TrimSpace(s), "(") {
		return "", false
	}
	m := displayText.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return "", false
	}
	word, operand := m[1], strings.TrimSpace(m[2])
	switch {
	case word == "kept" || word == "keep":
		return "{keep: true}", true
	case strings.Contains(operand, "://"):
		return `{secret: "` + operand + `"}`, true
	case refPattern.MatchString(operand):
		return "{from: " + operand + "}", true
	case word == "secret":
		return `{secret: "env://NAME"}`, true
	}
	return "{from: <line>.<output>}", true
}

// envName turns a parameter name into the environment variable a secret
// reference would most likely use, for hints.
func envName(key string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(key) {
		switch {
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9' && b.Len() > 0:
			b.WriteRune(r)
		default:
			if b.Len() > 0 {
				b.WriteByte('_')
			}
		}
	}
	if b.Len() == 0 {
		return "NAME"
	}
	return b.String()
}
