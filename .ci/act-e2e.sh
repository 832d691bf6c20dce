#!/usr/bin/env bash
# The Action as GitHub runs it: a container action (`uses: ./`, built from
# the Dockerfile) run by nektos/act through a pull request's life -
# opened, synchronize, closed - from GitHub's own webhook payloads
# (../shared/fixtures/github/webhooks/pull_request/), against the fake cloud
# (`sponson sim`) and the standalone fake GitHub (cmd/ghfake)
# on 127.0.0.1. It checks the outputs, that exactly one comment exists and
# was edited in place, the receipt branch on the remote, that no secret
# reached the log, and that after close nothing the pull request created is
# left in the fake cloud.
#
# usage: .ci/act-e2e.sh            (needs root, Docker from Debian, the Go module proxy)
# env:   SHARED   the shared folder (default: the parent of SPONSON_FIXTURES_DIR, else ../shared beside the checkout)
#        W        act's work dir, reused for dockerd's layer cache (default /tmp/sponson-act)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${SHARED:-}" ] && [ -n "${SPONSON_FIXTURES_DIR:-}" ]; then SHARED=$(cd "$SPONSON_FIXTURES_DIR/.." && pwd); fi
SHARED=${SHARED:-$(cd "$ROOT/.." && pwd)/shared}
FIX=$SHARED/fixtures/github/webhooks/pull_request
RUN_ACT=$SHARED/tools/act/run-act.sh
export W=${W:-/tmp/sponson-act}
START=$(date +%s)
say() { printf '[act-e2e %s] %s\n' "$(date +%T)" "$*" >&2; }
fail() { say "FAIL: $*"; say "logs in ${T:-?}"; exit 1; }
[ -f "$RUN_ACT" ] && [ -d "$FIX" ] || fail "no $RUN_ACT or $FIX (the shared folder must sit beside the checkout)"

for tool in jq curl; do
	command -v $tool >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $tool >/dev/null; }
done

# A fixed folder under W: the checkout's bytes, its .git file included, are
# the same from run to run, so Docker's layer cache keeps the compiled
# image. Its logs stay there after a failure.
T=$W/e2e
rm -rf "$T" && mkdir -p "$T"
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# wait_for FILE PATTERN: until a background server has printed its address.
wait_for() {
	for _ in $(seq 1 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	cat "$1" >&2; fail "no $2 in $1"
}

say "building sponson and ghfake"
mkdir -p "$T/bin"
go build -o "$T/bin/sponson" ./cmd/sponson
go build -o "$T/bin/ghfake" ./cmd/ghfake

# The fake cloud, seeded with one project per provider.
"$T/bin/sponson" sim --json --addr 127.0.0.1:0 >"$T/sim.json" 2>"$T/sim.err" &
PIDS+=($!)
wait_for "$T/sim.json" '"seeded"'
SIM=$(jq -r .url "$T/sim.json")
NEON=$(jq -r .seeded.NeonProject "$T/sim.json")
VERCEL=$(jq -r .seeded.VercelProject "$T/sim.json")
AUTH0=$(jq -r .seeded.Auth0Client "$T/sim.json")
SIM_ENV=()
while IFS= read -r kv; do SIM_ENV+=(--env "$kv"); done < <(jq -r '.env | to_entries[] | "\(.key)=\(.value)"' "$T/sim.json")
seeded_state=$(curl -fsS "$SIM/_state")

# The fake GitHub: the payloads' repository and pull request #2, and a
# workflow token that may write contents and pull requests.
TOKEN=e2e-workflow-token-0123456789
HEAD_SHA=$(jq -r .pull_request.head.sha "$FIX/opened.payload.json")
REPO=$(jq -r .repository.full_name "$FIX/opened.payload.json")
PR=$(jq -r .number "$FIX/opened.payload.json")
cat >"$T/seed.json" <<JSON
{"repos": [{"full_name": "$REPO", "default_branch": "master", "branches": {"changes": "the pull request's change"}}],
 "tokens": [{"token": "$TOKEN", "identity": {"login": "github-actions[bot]", "type": "Bot"},
             "permissions": {"contents": "write", "pull_requests": "write", "issues": "write", "actions": "read", "deployments": "read", "metadata": "read"},
             "repos": ["$REPO"]}],
 "pulls": [{"repo": "$REPO", "number": $PR, "state": "open", "head": {"ref": "changes", "sha": "$HEAD_SHA"}, "base": {"ref": "master"}}]}
JSON
"$T/bin/ghfake" -addr 127.0.0.1:0 -seed "$T/seed.json" -git "$T/ghgit" >"$T/ghfake.out" 2>"$T/ghfake.err" &
PIDS+=($!)
wait_for "$T/ghfake.out" GHFAKE_STATE_URL
GH_SERVER=$(sed -n 's/^GITHUB_SERVER_URL=//p' "$T/ghfake.out")
GH_API=$(sed -n 's/^GITHUB_API_URL=//p' "$T/ghfake.out")
GH_STATE=$(sed -n 's/^GHFAKE_STATE_URL=//p' "$T/ghfake.out")

# The checkout act runs: this repository's tracked files (the Action is
# `uses: ./`). Its git directory lives outside the tree, so the build
# context does not carry the history; its origin names the payloads'
# repository, which act reports as github.repository. The plan names the
# fake cloud's projects, which change from run to run: it stays out of the
# build context, in a folder mounted into the Action's container.
REPO_DIR=$T/repo
mkdir -p "$REPO_DIR" "$T/plan"
git ls-files -z | xargs -0 tar -cf - | tar -xf - -C "$REPO_DIR"
SECRET=sk_test_e2e_must_never_be_printed_42
PLAN=$T/plan/release.plan.yaml
cat >"$PLAN" <<YAML
version: 1
environments: [preview]
providers:
  neon:   { project: $NEON }
  vercel: { project: $VERCEL }
  auth0:  { domain: e2e.eu.auth0.com, client: $AUTH0 }
changes:
  - id: db
    adapter: neon
    op: branch
  - id: env
    adapter: vercel
    op: env
    target: preview
    values:
      DATABASE_URL: { from: db.connection_string }
      STRIPE_SECRET_KEY: { secret: "env://STRIPE_TEST_KEY" }
      NEXT_PUBLIC_SCOPE: \${ctx.scope}
  - id: callback
    adapter: auth0
    op: callback
    url: https://\${ctx.scope}.e2e.dev/callback
YAML
git init -q -b changes --separate-git-dir "$T/repo.git" "$REPO_DIR"
git -C "$REPO_DIR" -c user.name=e2e -c user.email=e2e@example.com add -A
git -C "$REPO_DIR" -c user.name=e2e -c user.email=e2e@example.com commit -qm "the pull request's checkout"
git -C "$REPO_DIR" remote add origin "https://github.com/$REPO.git"

# run EVENT: one act run of the workflow on a payload; its outputs land in $T/out.EVENT.json.
run() {
	local ev=$1
	say "act pull_request $ev"
	SPONSON_E2E_OUT=$T/out.$ev.json
	ACT_CONTAINER_OPTIONS="--network host -v $T/plan:$T/plan:ro" bash "$RUN_ACT" "$REPO_DIR" pull_request "$FIX/$ev.payload.json" \
		-W .github/workflows/action-e2e.yml \
		--env GITHUB_API_URL="$GH_API" --env GITHUB_SERVER_URL="$GH_SERVER" --env SPONSON_E2E_PLAN="$PLAN" \
		--env SPONSON_E2E_OUT="$SPONSON_E2E_OUT" --env STRIPE_TEST_KEY="$SECRET" \
		"${SIM_ENV[@]}" -s GITHUB_TOKEN="$TOKEN" >"$T/act.$ev.log" 2>&1 || { tail -80 "$T/act.$ev.log" >&2; fail "act exited non-zero on $ev"; }
	[ -s "$SPONSON_E2E_OUT" ] || { tail -80 "$T/act.$ev.log" >&2; fail "no outputs for $ev"; }
	# The job's log (not run-act's echo of its own command line) never shows them.
	if grep -v '^\[run-act ' "$T/act.$ev.log" | grep -q -e "$SECRET" -e "$TOKEN"; then fail "a secret reached the log of $ev"; fi
}
out() { jq -r ".$2" "$T/out.$1.json"; }
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }
# our_comments: the comments on the pull request, as the fake GitHub keeps them.
our_comments() { curl -fsS "$GH_STATE" | jq --arg r "$REPO" --argjson n "$PR" '[.repos[] | select(.full_name == $r) | .comments // [] | .[] | select(.issue == $n and (.deleted | not))]'; }
receipt() {
	rm -rf "$T/fetch" && git init -q --bare "$T/fetch"
	git -C "$T/fetch" fetch -q "http://x-access-token:$TOKEN@${GH_SERVER#http://}/$REPO.git" "refs/heads/sponson-receipts/preview/pr-$PR:refs/r" 2>/dev/null || return 1
	git -C "$T/fetch" show refs/r:receipt.json
}

run opened
expect "opened status" "$(out opened status)" complete
expect "opened scope" "$(out opened scope)" "pr-$PR"
expect "opened exit_code" "$(out opened exit_code)" 0
expect "opened skipped" "$(out opened skipped)" false
expect "opened receipt_ref" "$(out opened receipt_ref)" "sponson-receipts/preview/pr-$PR"
expect "opened result.ok" "$(out opened result | jq -r .ok)" true
c=$(our_comments)
expect "comments after opened" "$(jq length <<<"$c")" 1
expect "comment author" "$(jq -r '.[0].author.login' <<<"$c")" "github-actions[bot]"
jq -e '.[0].body | startswith("<!-- sponson:preview -->")' <<<"$c" >/dev/null || fail "the comment has no marker"
CID=$(jq -r '.[0].id' <<<"$c")
receipt | jq -e '.status == "complete" and (.ledger | length) >= 3' >/dev/null || fail "no complete receipt on the remote after opened"
curl -fsS "$SIM/_state" | jq -e --arg b "pr-$PR" '[.neon[].branches[].name | select(contains($b))] | length == 1' >/dev/null || fail "no database branch for pr-$PR"

run synchronize
expect "synchronize status" "$(out synchronize status)" complete
expect "synchronize exit_code" "$(out synchronize exit_code)" 0
c=$(our_comments)
expect "comments after synchronize" "$(jq length <<<"$c")" 1
expect "the comment kept its id" "$(jq -r '.[0].id' <<<"$c")" "$CID"
expect "edits after synchronize" "$(jq '.[0].edits | length' <<<"$c")" 1

# GitHub closes the pull request, then sends closed.
curl -fsS -X POST "${GH_STATE%/state}/seed" -d "{\"pulls\":[{\"repo\":\"$REPO\",\"number\":$PR,\"state\":\"closed\"}]}" >/dev/null
run closed
expect "closed status" "$(out closed status)" complete
expect "closed exit_code" "$(out closed exit_code)" 0
expect "closed receipt_ref" "$(out closed receipt_ref)" "sponson-receipts/preview/pr-$PR"
c=$(our_comments)
expect "comments after closed" "$(jq length <<<"$c")" 1
expect "the comment kept its id" "$(jq -r '.[0].id' <<<"$c")" "$CID"
expect "edits after closed" "$(jq '.[0].edits | length' <<<"$c")" 2
jq -e '.[0].body | contains("destroy")' <<<"$c" >/dev/null || fail "the comment does not say the scope was destroyed"
receipt | jq -e '.destroyed == true and .closed != null and (.ledger | length) == 0' >/dev/null || fail "no tombstone receipt on the remote after closed"
# Nothing the pull request created is left: the cloud is as it was seeded.
now=$(curl -fsS "$SIM/_state")
for p in '.neon[].branches' '.vercel[].envs' '.auth0[].lists.callbacks'; do
	expect "fake cloud $p after close" "$(jq -c "[$p] | flatten | map(if type == \"object\" then (.name // .key) else . end) | sort" <<<"$now")" \
		"$(jq -c "[$p] | flatten | map(if type == \"object\" then (.name // .key) else . end) | sort" <<<"$seeded_state")"
done
v=$(curl -fsS "$GH_STATE" | jq '.violations | length')
expect "requests GitHub's description refuses" "$v" 0

say "ok: opened, synchronize, closed in $(( $(date +%s) - START )) s"
