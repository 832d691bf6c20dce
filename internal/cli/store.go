package cli

import (
	"time"

	"github.com/sponson/apply/internal/wire"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
	"github.com/sponson/apply/pkg/receipt"
)

// storeFlags choose where receipts and leases live.
type storeFlags struct {
	kind   string // --receipts: local | git-branch | "" (decide)
	dir    string // --receipts-dir
	remote string // --receipts-remote
}

// openStore picks the store (wire.Choose: the flags, the environment, the
// plan's receipts:, the checkout's origin) and opens it; what choosing
// found worth saying joins the command's warnings.
func (a *app) openStore(planReceipts string) (*wire.Store, error) {
	cfg, err := a.chooseStore(planReceipts)
	for _, w := range cfg.Warnings {
		if w.Code == errs.LOCAL_RECEIPTS && !a.g.json && !writesReceipts(a.command) {
			// Said where it matters: when a receipt is written where CI
			// will not see it. --json reports it on every command.
			continue
		}
		a.warnings = append(a.warnings, w)
	}
	if err != nil {
		return nil, err
	}
	cfg.Warnings = nil
	st, err := wire.OpenStore(a.ctx, cfg, a.env.Dir, clock.System{})
	if err == nil {
		a.stores = append(a.stores, st)
	}
	return st, err
}

// storeWarnings moves what the opened stores found worth saying while the
// command ran (a remote that refuses compaction: STORE_UNCOMPACTED) into
// the command's warnings.
func (a *app) storeWarnings() {
	for _, st := range a.stores {
		if g := st.Git(); g != nil {
			a.warnings = append(a.warnings, g.Warnings()...)
		}
	}
}

// writesReceipts says whether a command writes to the receipt store.
func writesReceipts(command string) bool {
	switch command {
	case "apply", "destroy", "receipts push", "unlock", "demo":
		return true
	}
	return false
}

// identity is this invocation's lease owner, minus the run.
func (a *app) identity() wire.Identity {
	return wire.IdentityFromEnv(receipt.KindCLI, a.env.Getenv)
}

// owner describes one run of this invocation for leases and audit records.
func (a *app) owner(op receipt.Operation) receipt.Owner {
	return a.identity().Owner(op, time.Now())
}

// actor is who runs this: the GitHub actor, else the local user.
func (a *app) actor() string { return wire.Actor(a.env.Getenv) }

// chooseStore is the store a command would open (wire.Choose with this
// command's flags and environment), without opening it.
func (a *app) chooseStore(planReceipts string) (wire.StoreConfig, error) {
	return wire.Choose(wire.Choice{
		Kind: a.sf.kind, Remote: a.sf.remote, Dir: a.sf.dir, PlanReceipts: planReceipts,
		Getenv: a.env.Getenv, WorkDir: a.env.Dir,
		Origin: func() string {
			local, err := a.localGit()
			if err != nil || local == nil {
				return ""
			}
			return local.Origin
		},
	})

}

// localChosen reports whether the local store was asked for by name
// (--receipts local, SPONSON_RECEIPTS=local, the plan's receipts: local),
// not fallen back to for want of a remote.
func (a *app) localChosen(planReceipts string) bool {
	kind := a.sf.kind
	if kind == "" {
		kind = a.env.Getenv("SPONSON_RECEIPTS")
	}
	if kind == "" {
		kind = planReceipts
	}
	return kind == wire.StoreLocal
}
