package gitwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/sponson/apply/pkg/errs"
)

// Protocol v2 (gitprotocol-v2): the client side of upload-pack's ls-refs
// and fetch commands, which go-git v5 does not speak. ls-refs takes ref
// prefixes, so a read of one branch lists that branch, not every ref of
// the repository; fetch takes wants without a listing before it. Over
// HTTP each command is one POST with the header "Git-Protocol:
// version=2"; over file:// each is one `git upload-pack --stateless-rpc`
// with GIT_PROTOCOL=version=2 in its environment, the same exchange.
// docs/adr/0014.

// protocolHeader asks a smart-HTTP server (and upload-pack, as
// GIT_PROTOCOL) for protocol v2.
const protocolHeader = "version=2"

// v2Caps is what upload-pack's v2 capability advertisement says.
type v2Caps struct {
	fetch map[string]bool // the features of the fetch command: shallow, filter, ...
}

// pktKind is what one pkt-line of a v2 answer is.
type pktKind int

const (
	pktData  pktKind = iota
	pktFlush         // 0000
	pktDelim         // 0001
	pktEnd           // 0002 (response-end)
)

// pktReader reads the pkt-lines of a v2 answer: go-git's scanner knows
// only the flush packet.
type pktReader struct{ r *bufio.Reader }

func (p *pktReader) next() (pktKind, []byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(p.r, head[:]); err != nil {
		return 0, nil, err
	}
	var n [2]byte
	if _, err := hex.Decode(n[:], head[:]); err != nil {
		return 0, nil, fmt.Errorf("invalid pkt-len %q", head[:])
	}
	size := int(n[0])<<8 | int(n[1])
	switch size {
	case 0:
		return pktFlush, nil, nil
	case 1:
		return pktDelim, nil, nil
	case 2:
		return pktEnd, nil, nil
	case 3:
		return 0, nil, fmt.Errorf("invalid pkt-len %q", head[:])
	}
	line := make([]byte, size-4)
	if _, err := io.ReadFull(p.r, line); err != nil {
		return 0, nil, err
	}
	return pktData, line, nil
}

// advertiseV2 is upload-pack's advertisement asked for in protocol v2:
// its capabilities when it speaks v2 (no ref is listed); when it does
// not, the v0 advertisement it sent instead, as a Listing (every ref), so
// the exchange is not lost.
func (r *Remote) advertiseV2(ctx context.Context) (*v2Caps, *Listing, error) {
	r.roundTrips.Add(1)
	body, err := r.v2Open(ctx, "")
	if err != nil {
		return nil, nil, r.fail(err, "read the %s %s", r.name, r.url)
	}
	defer body.Close()
	br := bufio.NewReader(body)
	if peek, _ := br.Peek(64); !bytes.Contains(peek, []byte("version 2")) {
		l, err := r.v0Listing(br)
		return nil, l, err
	}
	caps := &v2Caps{fetch: map[string]bool{}}
	p := &pktReader{r: br}
	seen := false // the "version 2" line
	for {
		kind, line, err := p.next()
		if err != nil {
			return nil, nil, r.fail(err, "read the capabilities of %s", r.url)
		}
		if kind == pktFlush && len(caps.fetch) == 0 && !seen {
			continue // the end of a "# service=" preface some servers send first
		}
		if kind == pktFlush {
			return caps, nil, nil
		}
		seen = seen || string(line) == "version 2\n"
		key, value, _ := strings.Cut(strings.TrimSuffix(string(line), "\n"), "=")
		if key == "fetch" {
			for _, f := range strings.Fields(value) {
				caps.fetch[f] = true
			}
		}
	}
}

// v0Listing reads a v0 upload-pack advertisement: a server that does not
// speak v2 answered the v2 request with it.
func (r *Remote) v0Listing(in io.Reader) (*Listing, error) {
	ar := packp.NewAdvRefs()
	if err := ar.Decode(in); err != nil {
		if errors.Is(err, packp.ErrEmptyAdvRefs) {
			return &Listing{Refs: map[string]plumbing.Hash{}}, nil
		}
		return nil, r.fail(err, "list the refs of %s", r.url)
	}
	if ar.Capabilities.Supports(capability.Filter) {
		r.filter.Store(filterYes)
	} else {
		r.filter.Store(filterNo)
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, r.fail(err, "list the refs of %s", r.url)
	}
	l := &Listing{Refs: map[string]plumbing.Hash{}, Sideband64k: ar.Capabilities.Supports(capability.Sideband64k),
		OFSDelta: ar.Capabilities.Supports(capability.OFSDelta)}
	for name, ref := range refs {
		if ref.Type() == plumbing.HashReference {
			l.Refs[name.String()] = ref.Hash()
		}
	}
	return l, nil
}

// lsRefs is the v2 ls-refs command: the refs under prefixes (every ref
// for none), one round trip.
func (r *Remote) lsRefs(ctx context.Context, prefixes []string) (*Listing, error) {
	args := make([]string, 0, len(prefixes))
	for _, p := range prefixes {
		args = append(args, "ref-prefix "+p)
	}
	r.roundTrips.Add(1)
	body, err := r.v2Command(ctx, "ls-refs", args)
	if err != nil {
		return nil, r.fail(err, "list the refs of %s", r.url)
	}
	defer body.Close()
	l := &Listing{Refs: map[string]plumbing.Hash{}, Prefixes: append([]string{}, prefixes...), v2: true}
	p := &pktReader{r: bufio.NewReader(body)}
	for {
		kind, line, err := p.next()
		if err != nil {
			return nil, r.fail(err, "list the refs of %s", r.url)
		}
		if kind != pktData {
			return l, nil
		}
		fields := strings.Fields(string(line))
		if len(fields) < 2 || !plumbing.IsHash(fields[0]) {
			return nil, errs.New(errs.STORE_UNAVAILABLE, "%s answered ls-refs with %q, not a ref", r.url, line)
		}
		l.Refs[fields[1]] = plumbing.NewHash(fields[0])
	}
}

// fetchV2 is the v2 fetch command: wants at depth (0: whole history),
// filtered as shape says, into st; one round trip.
func (r *Remote) fetchV2(ctx context.Context, st *Storage, wants []plumbing.Hash, mode Mode, depth int) error {
	args := []string{"no-progress", "ofs-delta"}
	if mode == Tips || mode == Shapes || depth > 0 {
		args = append(args, "deepen "+strconv.Itoa(max(depth, 1)))
	}
	if r.v2.fetch["filter"] {
		if mode == Shapes {
			args = append(args, "filter blob:none")
		} else {
			args = append(args, "filter "+string(packp.FilterBlobLimit(uint64(r.blobLimit)+1, packp.BlobLimitPrefixNone)))
		}
	}
	for _, h := range wants {
		args = append(args, "want "+h.String())
	}
	args = append(args, "done")
	r.roundTrips.Add(1)
	body, err := r.v2Command(ctx, "fetch", args)
	if err != nil {
		return r.fail(err, "fetch %s from %s", r.noun, r.url)
	}
	defer body.Close()
	in := bufio.NewReader(&countingReader{r: body, n: &r.fetched})
	p := &pktReader{r: in}
	for {
		kind, line, err := p.next()
		if err != nil {
			return r.fail(err, "fetch %s from %s", r.noun, r.url)
		}
		if kind == pktData && string(line) == "packfile\n" {
			break
		}
		if kind == pktData && strings.HasPrefix(string(line), "ERR ") {
			// A want the remote no longer has (its branch moved or was
			// deleted since the listing): FetchListed lists again.
			return r.fail(errors.New(strings.TrimSpace(string(line))), "fetch %s from %s", r.noun, r.url)
		}
		if kind == pktFlush || kind == pktEnd {
			return errs.New(errs.STORE_UNAVAILABLE, "%s answered fetch without a packfile", r.url)
		}
		// acknowledgments, shallow-info, wanted-refs: nothing the
		// store keeps (its storage is never a repository).
	}
	if err := packfile.UpdateObjectStorage(st, sideband.NewDemuxer(sideband.Sideband64k, in)); err != nil {
		return r.fail(err, "read the packfile from %s", r.url)
	}
	return nil
}

// v2Command sends one v2 command with its arguments and returns the
// answer.
func (r *Remote) v2Command(ctx context.Context, command string, args []string) (io.ReadCloser, error) {
	var req bytes.Buffer
	e := pktline.NewEncoder(&req)
	if err := e.EncodeString("command="+command+"\n", "object-format=sha1\n"); err != nil {
		return nil, err
	}
	req.WriteString("0001")
	for _, a := range args {
		if err := e.EncodeString(a + "\n"); err != nil {
			return nil, err
		}
	}
	if err := e.Flush(); err != nil {
		return nil, err
	}
	return r.v2Open(ctx, req.String())
}

// v2Open sends request to upload-pack (empty: ask for its advertisement)
// in protocol v2 and returns the answer's body.
func (r *Remote) v2Open(ctx context.Context, request string) (io.ReadCloser, error) {
	if r.web == nil {
		return r.v2Local(ctx, request)
	}
	method, target, ctype := http.MethodPost, r.url+"/git-upload-pack", "application/x-git-upload-pack-request"
	if request == "" {
		method, target, ctype = http.MethodGet, r.url+"/info/refs?service=git-upload-pack", ""
	}
	req, err := http.NewRequestWithContext(ctx, method, target, strings.NewReader(request))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Git-Protocol", protocolHeader)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept", "application/x-git-upload-pack-result")
	}
	if a, ok := r.auth.(interface{ SetAuth(*http.Request) }); ok {
		a.SetAuth(req)
	}
	resp, err := r.web.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, statusError(resp.StatusCode)
	}
	return resp.Body, nil
}

// statusError is what an HTTP status other than 200 means, as go-git's
// own transport reports it (Classify reads both the same).
func statusError(code int) error {
	switch code {
	case http.StatusUnauthorized:
		return transport.ErrAuthenticationRequired
	case http.StatusForbidden:
		return transport.ErrAuthorizationFailed
	case http.StatusNotFound:
		return transport.ErrRepositoryNotFound
	}
	return fmt.Errorf("unexpected client error: unexpected requesting status code: %d", code)
}

// v2Local is v2Open over file://: one `git upload-pack` of the
// repository, as go-git's file transport runs it, with GIT_PROTOCOL.
func (r *Remote) v2Local(ctx context.Context, request string) (io.ReadCloser, error) {
	u, err := url.Parse(r.url)
	if err != nil {
		return nil, err
	}
	mode := "--stateless-rpc"
	if request == "" {
		mode = "--advertise-refs"
	}
	cmd := exec.CommandContext(ctx, "git", "upload-pack", mode, u.Path)
	cmd.Env = append(os.Environ(), "GIT_PROTOCOL="+protocolHeader)
	cmd.Stdin = strings.NewReader(request)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "not appear to be a git repository") {
			return nil, transport.ErrRepositoryNotFound
		}
		return nil, fmt.Errorf("git upload-pack: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}
