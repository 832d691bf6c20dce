package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/localstore"
)

// The invariants every scenario step is checked against (quality.md). The
// checker is pure: it judges one observation of one sponson command, so a
// unit test can feed it a leaking output and see it fail.
//
//	I1  no secret value, in any encoding a serializer may produce, appears
//	    in stdout, stderr, or any file under the receipts directory or the
//	    checkout's .sponson directory (receipts, leases, history, unsaved
//	    receipts);
//	I4  a read-only command (plan, validate, scope, receipt, locks, ...)
//	    sends no write to the cloud and leaves the watched files as they were;
//	I6  every receipt file a command wrote or changed parses as a receipt of
//	    format version 1 (leases and history events parse as JSON), and
//	    after an apply or destroy that ran, the store returns that run's own
//	    receipt: the run id printed is the stored one (or the unsaved
//	    receipt's, when the run says it could not write).

// observation is what one sponson command did and left behind.
type observation struct {
	Args           []string
	Exit           int
	Stdout, Stderr string
	// Before and After hold the watched files (absolute path → content)
	// before and after the command.
	Before, After map[string][]byte
	// WritesBefore and WritesAfter are the length of the cloud's write log
	// (every write request, failed ones included); -1 without a cloud.
	WritesBefore, WritesAfter int
	Secrets                   []string
	ReceiptsDir               string
}

// valuedFlags are the flags that take a separate value, to find the command.
var valuedFlags = map[string]bool{
	"--plan": true, "--env": true, "--pr": true, "--branch": true, "--sha": true, "--repo": true,
	"--receipts": true, "--receipts-dir": true, "--receipts-remote": true, "--approved-by": true,
	"--wait-timeout": true, "--parallelism": true, "--reason": true, "--parent": true, "--addr": true,
}

// subcommand is the command a sponson command line runs ("apply --destroy"
// is "destroy").
func subcommand(args []string) string {
	name := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if valuedFlags[a] {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		name = a
		break
	}
	if name == "apply" && slices.Contains(args, "--destroy") {
		return "destroy"
	}
	return name
}

// flagValue is the value of a flag given as "--f v" or "--f=v".
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// readOnly are the commands that must write nothing anywhere (I4).
var readOnly = map[string]bool{
	"plan": true, "validate": true, "scope": true, "receipt": true, "locks": true,
	"version": true, "schema": true, "help": true,
}

// encodings are the forms a secret may take in output (the redactor's list).
func encodings(secret string) []string {
	forms := []string{secret}
	if b, err := json.Marshal(secret); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	forms = append(forms,
		url.QueryEscape(secret), url.PathEscape(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawStdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)))
	slices.Sort(forms)
	return slices.Compact(forms)
}

// checkInvariants returns one message per violation, "" free.
func checkInvariants(o observation) []string {
	var bad []string
	cmd := subcommand(o.Args)

	// I1: secrets, everywhere.
	for _, s := range o.Secrets {
		if len(s) < 4 {
			continue // too short to mask; Sponson warns (SHORT_SECRET)
		}
		for _, f := range encodings(s) {
			if strings.Contains(o.Stdout, f) {
				bad = append(bad, fmt.Sprintf("I1: stdout holds a secret (%s)", mask(f)))
			}
			if strings.Contains(o.Stderr, f) {
				bad = append(bad, fmt.Sprintf("I1: stderr holds a secret (%s)", mask(f)))
			}
			for _, p := range sortedPaths(o.After) {
				if strings.Contains(string(o.After[p]), f) {
					bad = append(bad, fmt.Sprintf("I1: %s holds a secret (%s)", p, mask(f)))
				}
			}
		}
	}

	// I4: read-only commands write nothing.
	if readOnly[cmd] {
		if o.WritesBefore >= 0 && o.WritesAfter != o.WritesBefore {
			bad = append(bad, fmt.Sprintf("I4: %s sent %d write(s) to the cloud", cmd, o.WritesAfter-o.WritesBefore))
		}
		for _, p := range changedPaths(o.Before, o.After) {
			bad = append(bad, fmt.Sprintf("I4: %s changed %s", cmd, p))
		}
	}

	// I6: what was written parses.
	for _, p := range changedPaths(o.Before, o.After) {
		data, ok := o.After[p]
		if !ok {
			continue // removed
		}
		if msg := checkStoredFile(p, data); msg != "" {
			bad = append(bad, msg)
		}
	}
	// I6: the store returns the run's own receipt.
	if cmd == "apply" || cmd == "destroy" {
		bad = append(bad, checkOwnReceipt(o, cmd)...)
	}
	return bad
}

// checkStoredFile checks one file a command wrote: receipts (the store's
// receipt.json, unsaved receipts) decode as version 1; leases and history
// events are JSON. Other files (.flock, generation) are not judged.
func checkStoredFile(p string, data []byte) string {
	base := filepath.Base(p)
	isReceipt := base == receipt.ReceiptFile ||
		(strings.Contains(filepath.ToSlash(p), "/unsaved/") && strings.HasSuffix(base, ".json"))
	switch {
	case isReceipt:
		var probe struct {
			Version json.RawMessage `json:"version"`
			RunID   string          `json:"run_id"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			return fmt.Sprintf("I6: receipt %s is not JSON: %v", p, err)
		}
		if string(probe.Version) != "1" {
			return fmt.Sprintf("I6: receipt %s has version %s, want 1", p, probe.Version)
		}
		if probe.RunID == "" {
			return fmt.Sprintf("I6: receipt %s names no run", p)
		}
		if _, err := receipt.Decode(data); err != nil {
			return fmt.Sprintf("I6: receipt %s does not decode: %v", p, err)
		}
	case strings.HasSuffix(base, ".json"):
		if !json.Valid(data) {
			return fmt.Sprintf("I6: %s is not JSON", p)
		}
	}
	return ""
}

var (
	runLine   = regexp.MustCompile(`(?m)^(?:apply|destroy) (\S+)/(\S+): (.*) \(run (\S*)\)$`)
	savedLine = regexp.MustCompile(`(?m)^saved to (.+)$`)
	// storeCodes are failures that stop a run before its receipt can be
	// written (the store refused or could not be read); the run's receipt is
	// then neither stored nor expected.
	storeCodes = regexp.MustCompile(`\b(RECEIPT_CORRUPT|RECEIPT_VERSION|STORE_PERMISSION|STORE_CONTENDED|STORE_REJECTED|STORE_UNAVAILABLE|LOCK_LOST|SCOPE_CLOSED|SCOPE_COLLISION)\b`)
)

// checkOwnReceipt: an apply or destroy that ran (exit 0 or 1) and printed
// its run id finds that run's receipt in the store (or in the unsaved file
// it names). Refusals (exit 2, 3) write nothing and are not judged here.
func checkOwnReceipt(o observation, cmd string) []string {
	if o.Exit != 0 && o.Exit != 1 {
		return nil
	}
	var env, scope, runID, unsaved string
	stale := false
	if doc := jsonDoc(o.Stdout); doc != nil {
		env, _ = doc["env"].(string)
		scope, _ = doc["scope"].(string)
		if r, ok := doc["receipt"].(map[string]any); ok {
			runID, _ = r["run_id"].(string)
			stale, _ = r["stale"].(bool)
		}
		if u, ok := doc["unsaved"].(map[string]any); ok {
			unsaved, _ = u["path"].(string)
		}
	} else if m := runLine.FindStringSubmatch(o.Stdout); m != nil {
		env, scope, runID = m[1], m[2], m[4]
		stale = strings.HasPrefix(m[3], "stale")
		if s := savedLine.FindStringSubmatch(o.Stdout); s != nil {
			unsaved = strings.TrimSpace(s[1])
		}
	}
	if storeCodes.MatchString(o.Stdout + o.Stderr) {
		return nil
	}
	if runID == "" {
		if o.Exit == 0 {
			return []string{fmt.Sprintf("I6: %s exited 0 but named no run", cmd)}
		}
		return nil
	}
	if stale {
		return nil
	}
	if unsaved != "" {
		p := unsaved
		if !filepath.IsAbs(p) {
			for q := range o.After {
				if strings.HasSuffix(q, string(filepath.Separator)+filepath.FromSlash(p)) {
					p = q
				}
			}
		}
		data, ok := o.After[p]
		if !ok {
			return []string{fmt.Sprintf("I6: %s says its receipt was saved to %s, which is not there", cmd, unsaved)}
		}
		r, err := receipt.Decode(data)
		if err != nil || r.RunID != runID {
			return []string{fmt.Sprintf("I6: the unsaved receipt %s is not run %s's", unsaved, runID)}
		}
		return nil
	}
	st := localstore.New(o.ReceiptsDir, clock.System{})
	r, _, err := st.Read(context.Background(), env, scope)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("I6: reading the receipt of %s/%s after %s: %v", env, scope, cmd, err)}
	case r == nil:
		return []string{fmt.Sprintf("I6: %s run %s left no receipt for %s/%s", cmd, runID, env, scope)}
	case r.RunID != runID:
		return []string{fmt.Sprintf("I6: %s printed run %s but the store returns run %s for %s/%s", cmd, runID, r.RunID, env, scope)}
	}
	return nil
}

// jsonDoc is stdout as one JSON object, or nil.
func jsonDoc(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil
	}
	return m
}

func mask(s string) string {
	if len(s) <= 4 {
		return "****"
	}
	return s[:2] + strings.Repeat("*", len(s)-4) + s[len(s)-2:]
}

func sortedPaths(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// changedPaths are the files added, changed or removed.
func changedPaths(before, after map[string][]byte) []string {
	var out []string
	for p, a := range after {
		if b, ok := before[p]; !ok || string(a) != string(b) {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// snapshotFiles reads every regular file under the roots.
func snapshotFiles(roots ...string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			files[p] = data
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	return files, nil
}
