package errs

// Code is a stable error code. Codes are part of the public contract: scripts,
// the Action and the bot decide on them. Add codes freely; never rename one.
type Code string

// Exit codes. A run's exit code is decided by the code of its error alone.
const (
	ExitOK      = 0 // success, including partial and stale runs
	ExitFailed  = 1 // the run started and failed
	ExitRefused = 2 // refused before running: usage, plan, references, environment, approval, params
	ExitLock    = 3 // the scope lease was held by another run, or lost
)

// The codes. Their meaning, exit code and hint live in Table.
const (
	USAGE              Code = "USAGE"
	NOT_IMPLEMENTED    Code = "NOT_IMPLEMENTED"
	PLAN_PARSE         Code = "PLAN_PARSE"
	PLAN_INVALID       Code = "PLAN_INVALID"
	SECRET_LITERAL     Code = "SECRET_LITERAL"
	REF_UNKNOWN        Code = "REF_UNKNOWN"
	REF_CYCLE          Code = "REF_CYCLE"
	REF_FILTERED       Code = "REF_FILTERED"
	REF_OUTPUT_UNKNOWN Code = "REF_OUTPUT_UNKNOWN"
	CTX_NULL           Code = "CTX_NULL"
	ENV_UNKNOWN        Code = "ENV_UNKNOWN"
	ENV_NOT_APPROVED   Code = "ENV_NOT_APPROVED"
	ADAPTER_UNKNOWN    Code = "ADAPTER_UNKNOWN"
	OP_UNKNOWN         Code = "OP_UNKNOWN"
	PARAM_INVALID      Code = "PARAM_INVALID"
	OUTPUT_UNAVAILABLE Code = "OUTPUT_UNAVAILABLE"
	SCOPE_COLLISION    Code = "SCOPE_COLLISION"
	BRANCH_INVALID     Code = "BRANCH_INVALID"
	SCOPE_CLOSED       Code = "SCOPE_CLOSED"
	CREDENTIAL_MISSING Code = "CREDENTIAL_MISSING"

	SECRET_UNRESOLVED    Code = "SECRET_UNRESOLVED"
	SECRET_IN_STRUCTURE  Code = "SECRET_IN_STRUCTURE"
	DRIFT_CHANGED        Code = "DRIFT_CHANGED"
	OWNED_BY_OTHER_SCOPE Code = "OWNED_BY_OTHER_SCOPE"

	LOCK_HELD Code = "LOCK_HELD"
	LOCK_LOST Code = "LOCK_LOST"

	RECEIPT_CORRUPT   Code = "RECEIPT_CORRUPT"
	RECEIPT_VERSION   Code = "RECEIPT_VERSION"
	STORE_PERMISSION  Code = "STORE_PERMISSION"
	STORE_CONTENDED   Code = "STORE_CONTENDED"
	STORE_REJECTED    Code = "STORE_REJECTED"
	STORE_UNAVAILABLE Code = "STORE_UNAVAILABLE"

	WAIT_TIMEOUT       Code = "WAIT_TIMEOUT"
	EXTERNAL_FAILED    Code = "EXTERNAL_FAILED"
	STEP_NOT_DONE      Code = "STEP_NOT_DONE"
	DEPENDENCY_BLOCKED Code = "DEPENDENCY_BLOCKED"
	INTERRUPTED        Code = "INTERRUPTED"
	INTENT_UNRESOLVED  Code = "INTENT_UNRESOLVED"
	ROLLBACK_FAILED    Code = "ROLLBACK_FAILED"
	RUN_FAILED         Code = "RUN_FAILED"
	DESTROY_FAILED     Code = "DESTROY_FAILED"
	LEDGER_UNPROVEN    Code = "LEDGER_UNPROVEN"
	LEDGER_IMPLAUSIBLE Code = "LEDGER_IMPLAUSIBLE"
	RESOURCE_UNMARKED  Code = "RESOURCE_UNMARKED"

	PROVIDER_TRANSIENT   Code = "PROVIDER_TRANSIENT"
	PROVIDER_CONFLICT    Code = "PROVIDER_CONFLICT"
	PROVIDER_NOT_FOUND   Code = "PROVIDER_NOT_FOUND"
	PROVIDER_AUTH        Code = "PROVIDER_AUTH"
	PROVIDER_INVALID     Code = "PROVIDER_INVALID"
	PROVIDER_TIMEOUT     Code = "PROVIDER_TIMEOUT"
	PROVIDER_RESPONSE    Code = "PROVIDER_RESPONSE"
	PROVIDER_UNREACHABLE Code = "PROVIDER_UNREACHABLE"

	GITHUB_AUTH           Code = "GITHUB_AUTH"
	GITHUB_PERMISSION     Code = "GITHUB_PERMISSION"
	GITHUB_NOT_FOUND      Code = "GITHUB_NOT_FOUND"
	GITHUB_INVALID        Code = "GITHUB_INVALID"
	GITHUB_RATE_LIMITED   Code = "GITHUB_RATE_LIMITED"
	GITHUB_UNAVAILABLE    Code = "GITHUB_UNAVAILABLE"
	FILE_UNWRITABLE       Code = "FILE_UNWRITABLE"
	CONFIG_INVALID        Code = "CONFIG_INVALID"
	GITHUB_STATE          Code = "GITHUB_STATE"
	COMMAND_INVALID       Code = "COMMAND_INVALID"
	COMMAND_REFUSED       Code = "COMMAND_REFUSED"
	CREDENTIALS_NOT_FOUND Code = "CREDENTIALS_NOT_FOUND"
	CREDENTIALS_INVALID   Code = "CREDENTIALS_INVALID"
	SECRET_REFUSED        Code = "SECRET_REFUSED"

	INTERNAL Code = "INTERNAL"

	// Warnings: reported beside a result, never the cause of a failure.
	YAML_ANCHOR        Code = "YAML_ANCHOR"
	SHORT_SECRET       Code = "SHORT_SECRET"
	UNKNOWN_KEY        Code = "UNKNOWN_KEY"
	LOCAL_RECEIPTS     Code = "LOCAL_RECEIPTS"
	RECEIPTS_UNSIGNED  Code = "RECEIPTS_UNSIGNED"
	STORE_UNCOMPACTED  Code = "STORE_UNCOMPACTED"
	FORK_NO_SECRETS    Code = "FORK_NO_SECRETS"
	LEASE_NOT_RELEASED Code = "LEASE_NOT_RELEASED"
	SCOPE_REOPENED     Code = "SCOPE_REOPENED"
	STALE_RUN          Code = "STALE_RUN"
	STALE_UNDECIDED    Code = "STALE_UNDECIDED"
	ADOPTED_FORGOTTEN  Code = "ADOPTED_FORGOTTEN"
	APPLY_RUNNING      Code = "APPLY_RUNNING"
	SUCCESSION         Code = "SUCCESSION"
	RECREATE_SKIPPED   Code = "RECREATE_SKIPPED"
	LEASE_TAKEN_OVER   Code = "LEASE_TAKEN_OVER"
	NO_OPEN_PR         Code = "NO_OPEN_PR"
	EVENT_IGNORED      Code = "EVENT_IGNORED"
)

// Info is one row of the table.
type Info struct {
	Code    Code
	Exit    int    // the process exit code an error of this code gives
	Warning bool   // a warning, never an error
	Group   string // the family, for the generated documentation
	Meaning string // one line: what happened
	Hint    string // one line: what to do about it
}

// Table is the one code table. docs/errors.md is generated from it
// (go generate ./pkg/errs), and a test fails when the file is out of date.
var Table = []Info{
	{USAGE, ExitRefused, false, "usage", "The command line is not valid: an unknown command or flag, a missing argument, or no scope could be derived.", "Run `sponson help` for the commands and flags; give the scope with --pr or --branch when the event has none."},
	{NOT_IMPLEMENTED, ExitRefused, false, "usage", "The command exists in the design but is not built in this version.", "Upgrade Sponson, or use the commands `sponson help` lists as available."},

	{PLAN_PARSE, ExitRefused, false, "plan", "The plan file is not valid YAML, or cannot be read.", "Fix the YAML at the line and column shown; `sponson validate` checks the file without touching anything."},
	{PLAN_INVALID, ExitRefused, false, "plan", "The plan file is valid YAML but breaks a rule of format version 1.", "Fix the key at the line and column shown; see docs/plan-format.md for every key and value form."},
	{SECRET_LITERAL, ExitRefused, false, "plan", "A secret is written into the plan file as a literal value.", "Remove the value from the file (and rotate it if it was committed) and reference it instead: `{secret: \"env://NAME\"}`."},
	{REF_UNKNOWN, ExitRefused, false, "plan", "A `from` or `depends_on` names a line id that does not exist.", "Use the id of a line in this plan; ids are case-sensitive."},
	{REF_CYCLE, ExitRefused, false, "plan", "The lines depend on each other in a cycle.", "Break the cycle shown by removing one `from` or `depends_on`."},
	{REF_FILTERED, ExitRefused, false, "plan", "A line depends on a line that is filtered out of this environment.", "Add the environment to the `environments` of the line depended on, or remove it from the dependent line."},
	{REF_OUTPUT_UNKNOWN, ExitRefused, false, "plan", "A `from` names an output the referenced op does not have.", "Use one of the outputs listed in the message."},
	{CTX_NULL, ExitRefused, false, "plan", "A `${ctx.*}` variable is unknown or has no value in this run.", "Use one of the names listed, or run where it has a value (for example ctx.pr.number only inside a pull request)."},
	{ENV_UNKNOWN, ExitRefused, false, "plan", "The environment is not declared by the plan.", "Pass --env with one of the plan's environments, or add it to `environments:`."},
	{ENV_NOT_APPROVED, ExitRefused, false, "plan", "The run can write to production and names no approver.", "Pass --approved-by NAME (or set SPONSON_APPROVED_BY) for a run that may write production."},
	{ADAPTER_UNKNOWN, ExitRefused, false, "plan", "A line names an adapter Sponson does not have.", "Use one of the adapters listed in the message."},
	{OP_UNKNOWN, ExitRefused, false, "plan", "A line names an op its adapter does not have.", "Use one of the ops listed in the message."},
	{PARAM_INVALID, ExitRefused, false, "plan", "A parameter of a line is missing or has a value the op does not accept.", "Fix the parameter named in the message."},
	{OUTPUT_UNAVAILABLE, ExitRefused, false, "plan", "A line uses a once-only output (a password answered only to its create) this run cannot have: the line is recreated without the line that makes it, is new or gone, or its copy no longer matches the fingerprint in the receipt.", "Recreate the line that makes the value too: --recreate <line>."},
	{CREDENTIAL_MISSING, ExitRefused, false, "plan", "An active line's op needs a credential variable that is not set, or holds no usable value; the run was refused before anything was read or written.", "Set the variable named to the provider's token in the run's environment, then re-run."},
	{SCOPE_COLLISION, ExitRefused, false, "scope", "Two branch names collapse to the same scope.", "Rename one branch, or pass --branch with a name that does not collide."},
	{BRANCH_INVALID, ExitRefused, false, "scope", "The branch name is one git refuses (git check-ref-format): a control character, a space, ~ ^ : ? * [ \\, .., @{, a component starting with . or ending in .lock.", "Pass --branch with the name of a real branch; a name git refuses has no scope."},
	{SCOPE_CLOSED, ExitRefused, false, "scope", "The scope was destroyed when its pull request closed.", "Pass --reopen to apply to a closed scope on purpose."},

	{SECRET_UNRESOLVED, ExitFailed, false, "line", "A secret reference could not be resolved (missing or empty).", "Set the environment variable or create the file the reference names."},
	{SECRET_IN_STRUCTURE, ExitRefused, false, "line", "A secret's value is, or occurs in, a name Sponson records as is: the scope, the environment, the branch, a line id, the run id, a provider block or a literal parameter (a resource's key is made of these). Names are never masked, so the secret would be written to receipts and logs.", "Give the secret a value of its own (rotate it), or rename what it collides with; a value that is public in the plan is not a secret, so do not reference it as one."},
	{DRIFT_CHANGED, ExitFailed, false, "line", "A resource was changed outside Sponson since the last apply.", "Review the change; run apply with --reconcile to accept it, or revert it in the provider's console."},
	{OWNED_BY_OTHER_SCOPE, ExitFailed, false, "line", "Another scope of this environment manages the resource.", "Give the resource a name that includes ${ctx.scope}, or destroy the other scope first."},

	{LOCK_HELD, ExitLock, false, "lease", "Another run holds the lease.", "Re-run with --lock-wait 5m to wait for the lease (--wait also waits for deploys), or, if that run is dead, `sponson unlock <env> <scope> --reason \"...\"`."},
	{LOCK_LOST, ExitLock, false, "lease", "This run lost its lease (expired or taken over) and stopped before writing more.", "Re-run; the next run takes over from the recorded state. Raise the lease TTL if runs are slow."},

	{RECEIPT_CORRUPT, ExitFailed, false, "store", "A stored receipt cannot be parsed.", "Inspect the receipt branch or file named; Sponson never replaces it silently. Repair it by hand or push a saved receipt with `sponson receipts push --replace`."},
	{RECEIPT_VERSION, ExitFailed, false, "store", "A stored receipt was written by a newer Sponson.", "Upgrade Sponson to at least the version that wrote the receipt."},
	{STORE_PERMISSION, ExitFailed, false, "store", "The receipt store refused access.", "Grant the token `contents: write` on the repository (in a workflow: `permissions: { contents: write }`)."},
	{STORE_CONTENDED, ExitFailed, false, "store", "A conditional write to the store kept losing to other writers past its retry budget.", "Re-run; raise SPONSON_STORE_BUDGET if many runs write the same scope at once."},
	{STORE_REJECTED, ExitFailed, false, "store", "A server-side rule refused the write.", "Allow pushes to `sponson-receipts/*` branches in the repository's rules; the server's message says which rule."},
	{STORE_UNAVAILABLE, ExitFailed, false, "store", "The receipt store cannot be reached.", "Check the remote URL and the network; re-run when the store is reachable."},

	{WAIT_TIMEOUT, ExitFailed, false, "run", "Waiting for a lease or an external event took longer than the timeout.", "Raise --wait-timeout (or --lock-wait, when the wait was for a lease without --wait), or re-run later."},
	{EXTERNAL_FAILED, ExitFailed, false, "run", "An external event (such as a deployment) failed for good.", "Fix the failed deployment, then re-run apply."},
	{STEP_NOT_DONE, ExitFailed, false, "run", "A manual step was confirmed, but its verify check says it is not done.", "Do the step as its instructions say (plan shows them), then re-run apply --confirm <line>."},
	{DEPENDENCY_BLOCKED, ExitFailed, false, "run", "A line was skipped because a line it depends on did not succeed.", "Fix the line it depends on; this line runs on the next apply."},
	{INTERRUPTED, ExitFailed, false, "run", "The run was interrupted (signal or cancellation).", "Re-run; what was created is recorded and the next run continues from it."},
	{INTENT_UNRESOLVED, ExitFailed, false, "run", "A resource whose create may have succeeded could not be located.", "Check the provider for the resource named and delete it by hand if it exists, then re-run."},
	{RUN_FAILED, ExitFailed, false, "run", "A line failed after the run started (its own code is in the receipt and the error's cause); what this run created was rolled back.", "Fix the line named in the message and re-run; `sponson receipt` shows every line's result."},
	{ROLLBACK_FAILED, ExitFailed, false, "run", "Rolling back what this run created failed; some resources remain.", "Re-run apply to converge, or destroy the scope; the resources are named in the receipt."},
	{DESTROY_FAILED, ExitFailed, false, "run", "Destroying some resources failed; they stay in the ledger.", "Re-run destroy; the entries that remain are listed in the receipt."},
	{LEDGER_UNPROVEN, ExitFailed, false, "run", "A receipt's ledger claims Sponson created a resource that no receipt Sponson wrote for this scope ever recorded creating (the receipt was edited by hand); destroy leaves it alone.", "Inspect the scope's receipt history for the edit; remove the entry from the receipt, or delete the resource by hand if it really is this scope's."},
	{LEDGER_IMPLAUSIBLE, ExitFailed, false, "run", "A receipt's ledger names a resource its op could not have made in this scope's environment (a production variable in a preview scope); destroy leaves it alone.", "Inspect the scope's receipt history for the edit; remove the entry from the receipt, or delete the resource by hand if it really is this scope's."},
	{RESOURCE_UNMARKED, ExitFailed, false, "run", "The resource at the provider does not carry the mark of the scope whose ledger names it (made or changed outside Sponson, or by another scope); destroy leaves it alone.", "Check the resource at the provider against its op's scope mark (docs/adapters.md); if it really is this scope's, restore the mark (a Vercel variable's comment) and destroy again, or delete it by hand and remove the entry from the receipt."},

	{PROVIDER_TRANSIENT, ExitFailed, false, "provider", "The provider failed in a way that may pass (5xx, rate limit, network).", "Re-run; the retry budget was spent."},
	{PROVIDER_CONFLICT, ExitFailed, false, "provider", "The provider refused the write because of a conflicting state.", "Check the provider for a resource with the same name made outside Sponson; adopt it with `{keep: true}` or rename."},
	{PROVIDER_NOT_FOUND, ExitFailed, false, "provider", "The provider says a parent object (project, application) does not exist.", "Check the ids in the plan's `providers:` block."},
	{PROVIDER_AUTH, ExitFailed, false, "provider", "The provider refused the credentials.", "Set the adapter's credential variable (for example VERCEL_TOKEN) to a token with write access."},
	{PROVIDER_INVALID, ExitFailed, false, "provider", "The provider rejected a parameter value.", "Fix the parameter; the provider's message is shown."},
	{PROVIDER_TIMEOUT, ExitFailed, false, "provider", "The provider did not answer in time.", "Re-run; raise SPONSON_HTTP_TIMEOUT if the provider is slow."},
	{PROVIDER_RESPONSE, ExitFailed, false, "provider", "The provider answered with something Sponson cannot understand.", "Report it with the provider's response; the provider may have changed its API."},
	{PROVIDER_UNREACHABLE, ExitFailed, false, "provider", "The provider's host does not exist (no such host), or nothing listens at its address (connection refused): nothing was sent, and it is not retried.", "Check the base URL in the message: the adapter's *_API_URL variable, or base_url / base_url_env of the plan's http API, and the runner's network."},

	{GITHUB_AUTH, ExitFailed, false, "github", "GitHub refused the credentials: the token is missing, wrong, expired or revoked, or the App's key or id is wrong.", "In a workflow pass `github_token: ${{ github.token }}`; for the bot check SPONSON_APP_ID and SPONSON_APP_PRIVATE_KEY, and that the App is installed on the repository."},
	{GITHUB_PERMISSION, ExitFailed, false, "github", "The GitHub token lacks a permission this call needs (the message names it).", "Add the permission named to the workflow's `permissions:` block (or to the App's permissions, then accept them on the installation)."},
	{GITHUB_NOT_FOUND, ExitFailed, false, "github", "GitHub has no such repository, pull request, run, branch or commit, or the token may not see it.", "Check the name in the message; a private repository the token cannot read also answers not found."},
	{GITHUB_INVALID, ExitFailed, false, "github", "GitHub refused the request as invalid (422).", "The message carries GitHub's reason; report it if Sponson built the request."},
	{GITHUB_RATE_LIMITED, ExitFailed, false, "github", "GitHub's rate limit held past the run's budget for waiting.", "Re-run later, or raise the run's time budget; the bot's metrics show time spent throttled."},
	{GITHUB_UNAVAILABLE, ExitFailed, false, "github", "GitHub could not be reached or answered with a server error.", "Check GITHUB_API_URL and the network (https://www.githubstatus.com for github.com); re-run when GitHub answers."},
	{FILE_UNWRITABLE, ExitFailed, false, "usage", "A file of the working tree the command writes (the plan `sponson init` starts, .gitignore) could not be written; it was left as it was.", "Check that the directory exists and is writable, then run the command again."},
	{CONFIG_INVALID, ExitRefused, false, "bot", "The environment the bot or the Action runs in is missing a variable or has a value it cannot use; nothing ran.", "Set the variables the message names (each of the bot's secrets may also be given as a file with the _FILE variant; the Action's come from the GitHub Actions runner, so run it as a workflow step), then start it again; the README's bot and Action sections list them."},
	{GITHUB_STATE, ExitFailed, false, "bot", "GitHub could not say the state of a pull request or branch, so the scope was left as it is.", "Nothing is destroyed while GitHub's answer is unknown; the next sweep asks again. Check the App's permissions (pull requests: read) if it keeps failing."},
	{COMMAND_INVALID, ExitRefused, false, "bot", "A pull request comment starting with /sponson names no command the bot knows, or gives it the wrong arguments; nothing ran.", "Comment one of the commands the bot's answer lists, e.g. `/sponson plan`, `/sponson confirm <line>` or `/sponson destroy --env preview`."},
	{COMMAND_REFUSED, ExitRefused, false, "bot", "The commenter may not run this /sponson command here (repository permission below write, asked of GitHub; for production, neither admin nor on the approvers team); nothing ran. A comment on a closed pull request or a fork's is ignored, not refused.", "Ask someone with write permission on the repository (for production an admin, or a member of SPONSON_APPROVERS_TEAM) to comment the command."},
	{CREDENTIALS_NOT_FOUND, ExitRefused, false, "bot", "SPONSON_CREDENTIALS_DIR is set and holds no credentials file for the repository (neither <owner>/<repo>.env nor <owner>.env); the bot did no provider work for it and used no other repository's credentials.", "Add the file the message names (dotenv lines such as VERCEL_TOKEN=...; a Kubernetes secret mounted at SPONSON_CREDENTIALS_DIR works), then push, reopen or wait for the next sweep."},
	{CREDENTIALS_INVALID, ExitRefused, false, "bot", "A credentials file under SPONSON_CREDENTIALS_DIR is not a dotenv file the bot can read (the message names the file and line); the repository's provider work was refused.", "Fix the line named: NAME=value, NAME=\"value\" or NAME='value', # comments and blank lines; each name once."},
	{SECRET_REFUSED, ExitRefused, false, "bot", "A plan the bot runs (read from a pull request's head commit) references one of the bot's own settings or secrets as a secret (env://SPONSON_..., such as the App's private key or the webhook secret, or a GitHub token): a pull request's plan may reach provider credentials only; nothing ran.", "Reference the provider's own credential variable instead (VERCEL_TOKEN, NEON_API_KEY, ... in the repository's credentials file under SPONSON_CREDENTIALS_DIR, or the bot's environment); the bot's own secrets are never handed to a plan."},

	{INTERNAL, ExitFailed, false, "internal", "A bug in Sponson.", "Report it with the command and its --json output; nothing was written after the failure."},

	{YAML_ANCHOR, ExitOK, true, "warning", "The plan uses a YAML anchor or alias.", "Write the line out in full: a line copied by an alias is easy to misread in review."},
	{SHORT_SECRET, ExitOK, true, "warning", "A secret is shorter than 4 characters and cannot be masked safely.", "Use a longer secret; short values are not masked in output because masking them would hide ordinary text."},
	{UNKNOWN_KEY, ExitOK, true, "warning", "The plan has a top-level key that format version 1 does not know.", "Remove the key or fix its spelling; the JSON schema rejects it."},
	{LOCAL_RECEIPTS, ExitOK, true, "warning", "No git remote is known, so receipts are kept in the local store.", "Pass --receipts-remote or run in a checkout with an `origin`, so CI runs share one record."},
	{RECEIPTS_UNSIGNED, ExitOK, true, "warning", "SPONSON_RECEIPT_KEY is set, but receipts are kept in the local store, which does not sign: its record of what Sponson created is a file on this machine, trusted as it is.", "Use the git-branch store (--receipts-remote, or a checkout with an `origin`) for signed receipts; for a local run, unset SPONSON_RECEIPT_KEY to silence this."},
	{STORE_UNCOMPACTED, ExitOK, true, "warning", "The receipts remote refused to rewrite a receipt branch, so its history grows by one commit per write instead of staying bounded.", "Let the Action and the bot force-push `sponson-receipts/**` (the README's receipts ruleset; on a plain git server, `git config receive.denyNonFastForwards false`)."},
	{LEASE_NOT_RELEASED, ExitOK, true, "warning", "A lease could not be released after the run; it stays held until it expires.", "Wait for it to expire, or release it with the `sponson unlock` command the message names."},
	{SCOPE_REOPENED, ExitOK, true, "warning", "A closed scope was reopened by this run (--reopen).", "Nothing to do; destroy it again with --close when its pull request closes for good."},
	{STALE_RUN, ExitOK, true, "warning", "This commit is older than one already applied to the scope: the run writes nothing.", "Nothing to do: the newer commit's run owns the scope. Push a new commit to apply again."},
	{STALE_UNDECIDED, ExitOK, true, "warning", "Whether this commit is older than the last one applied cannot be decided here (no local history): the run goes on.", "Fetch the history (actions/checkout with fetch-depth: 0) so stale runs can be recognised."},
	{ADOPTED_FORGOTTEN, ExitOK, true, "warning", "A resource Sponson adopted is no longer declared by any line: it is forgotten and left as it is.", "Nothing to do; add the line back with {keep: true} to manage it again."},
	{APPLY_RUNNING, ExitOK, true, "warning", "An apply holds the scope's lease: this plan may be out of date when it finishes.", "Plan again once the apply has finished (`sponson locks` shows it)."},
	{RECREATE_SKIPPED, ExitOK, true, "warning", "apply --recreate left a resource alone: this scope did not create it (adopted), or created nothing for the line yet.", "Nothing to do: only what this scope created is deleted and created again."},
	{SUCCESSION, ExitOK, true, "warning", "Resources moved, or could not move, between a branch's scope and its pull request's (succession).", "Nothing to do in most cases; the message says which scope owns what."},
	{FORK_NO_SECRETS, ExitOK, true, "warning", "The pull request comes from a fork; its workflow has no secrets and is never handed any.", "Nothing to do: Sponson does not apply from forks."},
	{LEASE_TAKEN_OVER, ExitOK, true, "warning", "The lease was taken over before its TTL because the GitHub run holding it has completed or was cancelled.", "Nothing to do; the receipt records whose lease it was and why it was taken over."},
	{EVENT_IGNORED, ExitOK, true, "warning", "The Action was run for an event (or an action of one) that command auto does nothing for: it skipped, touching nothing.", "Nothing to do; restrict the workflow's `on:` to the events Sponson acts on, or set the command input."},
	{NO_OPEN_PR, ExitOK, true, "warning", "A deployment succeeded for a commit that no open pull request has as its head: there is no preview to finish.", "Nothing to do: a closed pull request's preview is never rebuilt. Open a pull request for the branch to get one."},
}

var byCode = func() map[Code]Info {
	m := make(map[Code]Info, len(Table))
	for _, in := range Table {
		if _, dup := m[in.Code]; dup {
			panic("errs: duplicate code " + string(in.Code))
		}
		m[in.Code] = in
	}
	return m
}()

// Lookup returns the table row of a code. An unknown code is reported as
// INTERNAL, because only a bug can make one.
func Lookup(c Code) Info {
	if in, ok := byCode[c]; ok {
		return in
	}
	return byCode[INTERNAL]
}

// Known reports whether c is a code of the table.
func Known(c Code) bool {
	_, ok := byCode[c]
	return ok
}

// Exit is the process exit code of a code.
func (c Code) Exit() int { return Lookup(c).Exit }

// Hint is the table's hint for a code.
func (c Code) Hint() string { return Lookup(c).Hint }
