package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sponson/apply/internal/report"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// lockView is one lease as `sponson locks` shows it.
type lockView struct {
	Target     string        `json:"target"`
	Kind       string        `json:"kind"` // scope | parent
	Env        string        `json:"env,omitempty"`
	Scope      string        `json:"scope,omitempty"`
	Identity   string        `json:"identity,omitempty"`
	Holder     string        `json:"holder"`
	Generation int64         `json:"generation"`
	AcquiredAt time.Time     `json:"acquired_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
	Expired    bool          `json:"expired"`
	AgeSeconds int64         `json:"age_seconds"`
	LeftSecs   int64         `json:"expires_in_seconds"`
	Operation  string        `json:"operation,omitempty"`
	Owner      receipt.Owner `json:"owner"`
	Unlock     string        `json:"unlock"`
}

// LocksOptions are `sponson locks`'s.
type LocksOptions struct {
	f     *Factory
	Store StoreOptions
}

func newCmdLocks(f *Factory, runF func(*LocksOptions) error) *cobra.Command {
	opts := &LocksOptions{f: f}
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "List every held lease: scopes' and shared parent objects'",
		Long: `Lists every lease in the receipt store with its holder, age, expiry and owner (the run, the
program, the actor, the GitHub run, the host), live or expired, and the command that releases it.`,
		Example: `  sponson locks
  sponson locks --receipts-remote https://github.com/OWNER/REPO.git --json
  sponson locks --receipts local`,
		Args: exactArgs(0),
		RunE: runWith(opts, runF, locksRun),
	}
	addStoreFlags(cmd, &opts.Store)
	return cmd
}

func locksRun(opts *LocksOptions) error {
	f := opts.f
	st, err := opts.Store.open(f, "")
	if err != nil {
		return err
	}
	leases, err := st.Locks(f.Context)
	var unreadable *receipt.UnreadableError
	if errors.As(err, &unreadable) {
		// A damaged lease hides nothing else: list the others and
		// name each bad one.
		for _, it := range unreadable.Items {
			msg := it.Err.Error()
			if e := errs.As(it.Err); e != nil {
				msg = e.Message
			}
			f.answer.warn(errs.New(errs.RECEIPT_CORRUPT, "the lease on %s cannot be read: %s", it.Where, msg))
		}
		err = nil
	}
	if err != nil {
		return err
	}
	now := clock.Or(f.Clock).Now()
	views := make([]lockView, 0, len(leases))
	for _, l := range leases {
		views = append(views, viewLease(l, now))
	}
	f.answer.set(map[string]any{"store": st, "capabilities": st.Capabilities(), "locks": views}, func(w io.Writer) {
		fmt.Fprintf(w, "store: %s (%s), %s\n", st.Kind, st.Location, capabilities(st.Capabilities()))
		if len(views) == 0 {
			fmt.Fprintln(w, "no leases are held")
			return
		}
		writeLocks(w, views, f.textOptions(nil))
	})
	return nil
}

// writeLocks is the table of leases.
func writeLocks(w io.Writer, views []lockView, o report.TextOptions) {
	t := &report.Table{}
	t.Row(report.S(report.Bold, "TARGET"), report.S(report.Bold, "HOLDER"), report.S(report.Bold, "GEN"),
		report.S(report.Bold, "AGE"), report.S(report.Bold, "EXPIRES"), report.S(report.Bold, "OWNER"))
	for _, v := range views {
		exp, style := "in "+short(time.Duration(v.LeftSecs)*time.Second), report.Plain
		if v.Expired {
			exp, style = "expired "+short(time.Duration(-v.LeftSecs)*time.Second)+" ago", report.Yellow
		}
		t.Row(report.C(report.Clean(v.Target, o.Width/2)), report.C(v.Holder), report.C(fmt.Sprint(v.Generation)),
			report.C(short(time.Duration(v.AgeSeconds)*time.Second)), report.S(style, exp), report.S(report.Dim, ownerText(v.Owner)))
	}
	t.Write(w, report.Painter{Color: o.Color})
}

// UnlockOptions are `sponson unlock`'s.
type UnlockOptions struct {
	f      *Factory
	Store  StoreOptions
	Args   []string // <env> <scope>, or none with --parent
	Reason string
	Parent string
}

func newCmdUnlock(f *Factory, runF func(*UnlockOptions) error) *cobra.Command {
	opts := &UnlockOptions{f: f}
	cmd := &cobra.Command{
		Use:   "unlock [<env> <scope>] [--parent IDENTITY] --reason TEXT",
		Short: "Release a lease by force, with a recorded reason",
		Long: `Releases the lease of a scope (sponson unlock preview pr-12 --reason "...") or of a shared
parent object (sponson unlock --parent "auth0:example.eu.auth0.com:client:AbCd" --reason "...")
whoever holds it. Who, when and why are written into the target's history. The holder, if it is
still running, is fenced out: its next write fails with LOCK_LOST.`,
		Example: `  sponson unlock preview pr-12 --reason "the run was cancelled"
  sponson unlock --parent "auth0:example.eu.auth0.com:client:AbCd" --reason "the runner died"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return unlockRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "why the lease is released (recorded)")
	cmd.Flags().StringVar(&opts.Parent, "parent", "", "the identity of a shared parent object, instead of <env> <scope>")
	addStoreFlags(cmd, &opts.Store)
	return cmd
}

// target is the lease to release.
func (opts *UnlockOptions) target() (receipt.Target, error) {
	args := opts.Args
	switch {
	case opts.Parent != "" && (len(args) == 0 || len(args) == 2):
		// A shared object's lease is no scope's: `unlock <env> <scope>
		// --parent ID` (the scope that was blocked, as the README writes
		// it) releases the object's lease all the same.
		return receipt.ParentTarget(opts.Parent), nil
	case opts.Parent == "" && len(args) == 2:
		return receipt.ScopeTarget(args[0], args[1]), nil
	}
	return receipt.Target{}, errs.New(errs.USAGE, "unlock takes <env> <scope>, or --parent IDENTITY").
		WithHint(`sponson unlock preview pr-12 --reason "the run was cancelled"`)
}

func unlockRun(opts *UnlockOptions) error {
	f := opts.f
	target, err := opts.target()
	if err != nil {
		return err
	}
	reason := opts.Reason
	if strings.TrimSpace(reason) == "" {
		return errs.New(errs.USAGE, "unlock needs --reason: it is recorded with who released the lease and when").
			WithHint("%s", strings.Replace(target.UnlockCommand(), `"..."`, `"the run was cancelled"`, 1))
	}
	if err := target.Validate(); err != nil {
		return err
	}
	st, err := opts.Store.open(f, "")
	if err != nil {
		return err
	}
	who := f.actor()
	released, err := st.ForceRelease(f.Context, target, reason, who)
	if err != nil {
		return err
	}
	f.answer.set(map[string]any{"target": target.String(), "released": released, "reason": reason, "by": who}, func(w io.Writer) {
		if released == nil {
			fmt.Fprintf(w, "no lease was held on %s; nothing to release\n", target)
			return
		}
		fmt.Fprintf(w, "released the lease on %s held by %s (generation %d), recorded in its history\n",
			target, ownerText(released.Owner), released.Generation)
	})
	return nil
}

func viewLease(l receipt.Lease, now time.Time) lockView {
	v := lockView{
		Target: l.Target.String(), Holder: l.Holder, Generation: l.Generation,
		AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt, Expired: l.Expired(now),
		AgeSeconds: int64(now.Sub(l.AcquiredAt) / time.Second), LeftSecs: int64(l.ExpiresAt.Sub(now) / time.Second),
		Operation: string(l.Operation), Owner: l.Owner, Unlock: l.Target.UnlockCommand(),
	}
	if l.Target.IsParent() {
		v.Kind, v.Identity = "parent", l.Target.Identity
	} else {
		v.Kind, v.Env, v.Scope = "scope", l.Target.Env, l.Target.Scope
	}
	return v
}

func ownerText(o receipt.Owner) string {
	parts := []string{string(o.Kind)}
	if o.Operation != "" {
		parts = append(parts, string(o.Operation))
	}
	if o.Actor != "" {
		parts = append(parts, "by "+o.Actor)
	}
	if o.GitHubRunID != 0 {
		run := fmt.Sprintf("GitHub run %d/%d", o.GitHubRunID, o.GitHubRunAttempt)
		if o.Repository != "" {
			run += " of " + o.Repository
		}
		parts = append(parts, run)
	}
	if o.Host != "" {
		parts = append(parts, fmt.Sprintf("on %s pid %d", o.Host, o.PID))
	}
	return strings.Join(parts, ", ")
}

func capabilities(c receipt.Capabilities) string {
	var have []string
	if c.Locking {
		have = append(have, "locking")
	}
	if c.FencedWrites {
		have = append(have, "fenced writes")
	}
	if c.AtomicMulti {
		have = append(have, "atomic multi-scope writes")
	}
	if c.History {
		have = append(have, "history")
	}
	return strings.Join(have, ", ")
}

func short(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	default:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
}
