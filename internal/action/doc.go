// Package action is the GitHub Action `uses: sponson/apply@v1`: the event
// → command table, the inputs and outputs, masks, annotations, the pull
// request comment and the job summary. cmd/action is two lines over Main.
//
// A run: read the inputs (INPUT_*), register every secret known at the
// start (the token, credential-looking variables, the values of the plan's
// secret references) and send each as ::add-mask:: before any other
// byte. Every byte of stdout leaves through one redact.Lines: whole lines
// only, redacted, and before each line the masks of the values registered
// since (a sensitive output resolved mid-run), so a workflow command
// always starts a line and the runner masks a value before any line that
// could hold it, whatever progress (a lease wait, a takeover) is printed
// meanwhile. The first line after the masks (the first the log shows) is
// the build's version, as `sponson --version` prints it. Outside a job
// (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH or GITHUB_OUTPUT unset: `docker
// run` of the image) the run ends there with one CONFIG_INVALID error
// naming what is missing, exit 2. Then the event: pkg/scope computes the scope, Decide picks the
// command (or a skip that touches nothing), internal/wire builds the run on
// the git-branch store of the run's own repository
// (${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}.git, authenticated with the
// github_token input) and the engine plans, applies or destroys. Finally
// internal/report renders the result: errors and warnings as annotations
// (on the plan file's line and column when they have one), one comment per
// environment on the pull request, the job summary, the outputs. The exit
// code is the CLI's for the same run, decided after the comment is posted.
//
// Invariants:
//   - Main reads nothing but its Env: no process environment, working
//     directory or standard stream behind it, so tests drive it in-process
//     against a fake GitHub and the fake cloud.
//   - The Action never runs the CLI and never decodes its JSON: it calls
//     the engine through internal/wire and gets typed results.
//   - A skip (a fork, a scope closed with its pull request, an event with
//     nothing to do, a deployment with no open pull request) writes
//     nothing anywhere: no provider call, no lease, no receipt, no
//     comment. It says why in a notice and in skip_reason.
//   - One comment per environment: the comment that starts with
//     report.Marker(env) and was written by the token's own identity
//     (comment_author, github-actions[bot] by default) is edited in place;
//     only when there is none is one created. The lookup pages through
//     every comment. Someone else's comment is never edited, marker or not.
//   - A run that is not a skip shows on GitHub (deploy.go): an apply is a
//     deployment of <env>/<scope> (in_progress, then success with the
//     plan's environment_url, or failure/error), a destroy marks the
//     environment's deployment inactive, and each sets the commit status
//     sponson/<env> on the head commit, linking to the comment. A refused
//     call is a warning; it never changes the exit code. A deployment
//     Sponson made (task sponson) is never a deployment to finish.
//   - A lease held by a workflow run that GitHub says has completed, was
//     cancelled, or was superseded by a later attempt is taken over at once
//     (engine.HolderGone), and the receipt records why. With a shallow
//     checkout the stale-run check asks the compare API.
package action
