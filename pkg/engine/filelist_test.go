package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sponson/apply/pkg/adapter"
	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/errs"
)

// fileItem is filelist.item, a test op: one entry in a list kept in a JSON
// file (<provider dir>/<list>.json, an array of strings), written by
// read-modify-write with no precondition — read the file, wait latency,
// write it back whole (to a temporary file renamed into place). Processes
// sharing the directory share the list, and two of them writing at once
// lose an entry exactly as two callers of a provider API would: this is
// the shared fake cloud of the multi-process I9 test.
//
// Key fileitem:<list>:<item>; LockOn filelist:<dir>:list:<list>.
type fileItem struct{ latency time.Duration }

var (
	_ adapter.Op           = fileItem{}
	_ adapter.ParentLocker = fileItem{}
	_ adapter.Defaulter    = fileItem{}
)

func (fileItem) Spec() adapter.Spec {
	return adapter.Spec{Adapter: "filelist", Op: "item", ListItem: true, Lock: "filelist:<dir>:<list>", Summary: "an entry of a list in a JSON file (tests only)",
		Provider: []adapter.ParamSpec{{Name: "dir", Type: adapter.TypeString, Doc: "the folder of the list files"}},
		Outputs:  []adapter.OutputSpec{{Name: "item", When: adapter.Immediate}}}
}

type fileReq struct{ dir, list, item, key string }

func parseFileReq(params map[string]any, p adapter.Provider) (fileReq, error) {
	dir, _ := p["dir"].(string)
	list, _ := params["list"].(string)
	item, _ := params["item"].(string)
	if dir == "" || list == "" || item == "" || strings.ContainsAny(list, ":/") {
		return fileReq{}, errs.New(errs.PARAM_INVALID, "filelist.item needs providers.filelist.dir, list and item")
	}
	return fileReq{dir: dir, list: list, item: item, key: "fileitem:" + list + ":" + item}, nil
}

func (fileItem) Defaults(params map[string]any, p adapter.Provider, _ adapter.RunCtx) (map[string]any, error) {
	if _, err := parseFileReq(params, p); err != nil {
		return nil, err
	}
	return params, nil
}

func (fileItem) LockOn(params map[string]any, p adapter.Provider) string {
	r, err := parseFileReq(params, p)
	if err != nil {
		return ""
	}
	return "filelist:" + r.dir + ":list:" + r.list
}

func listPath(dir, list string) string { return filepath.Join(dir, list+".json") }

// readFileList reads a list; a missing file is an empty list.
func readFileList(dir, list string) ([]string, error) {
	data, err := os.ReadFile(listPath(dir, list))
	if errors.Is(err, fs.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, errs.Wrap(err, errs.PROVIDER_TRANSIENT, "read list %s", list)
	}
	var out []string
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errs.Wrap(err, errs.PROVIDER_RESPONSE, "list %s", list)
	}
	return out, nil
}

func writeFileList(dir, list string, items []string) error {
	data, _ := json.Marshal(items)
	b := make([]byte, 8)
	rand.Read(b)
	tmp := listPath(dir, list) + ".tmp-" + hex.EncodeToString(b)
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return errs.Wrap(err, errs.PROVIDER_TRANSIENT, "write list %s", list)
	}
	if err := os.Rename(tmp, listPath(dir, list)); err != nil {
		return errs.Wrap(err, errs.PROVIDER_TRANSIENT, "write list %s", list)
	}
	return nil
}

func (f fileItem) rmw(ctx context.Context, r fileReq, change func([]string) []string) error {
	cur, err := readFileList(r.dir, r.list) // GET
	if err != nil {
		return err
	}
	next := change(slices.Clone(cur))
	if slices.Equal(next, cur) {
		return nil
	}
	if f.latency > 0 {
		if err := sleepOn(clock.System{}, ctx, f.latency); err != nil {
			return errs.Wrap(err, errs.PROVIDER_TIMEOUT, "not sent")
		}
	}
	return writeFileList(r.dir, r.list, next) // PUT, overwriting whatever was written since the GET
}

func (f fileItem) res(r fileReq) adapter.Resource {
	return adapter.Resource{Key: r.key, Value: r.item, Outputs: map[string]any{"item": r.item}}
}

func (f fileItem) Read(ctx context.Context, req adapter.Request) (*adapter.Live, error) {
	r, err := parseFileReq(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	cur, err := readFileList(r.dir, r.list)
	if err != nil {
		return nil, err
	}
	live := &adapter.Live{Resources: []adapter.Resource{}}
	if slices.Contains(cur, r.item) {
		live.Resources = append(live.Resources, f.res(r))
		live.Outputs = map[string]any{"item": r.item}
	}
	return live, nil
}

func (f fileItem) Diff(live *adapter.Live, req adapter.Request) ([]adapter.ResourceDiff, error) {
	r, err := parseFileReq(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	d := adapter.ResourceDiff{Key: r.key, Action: adapter.Unchanged, Desired: r.item}
	if live.Resource(r.key) == nil {
		d.Action, d.Fields = adapter.Create, []adapter.FieldDiff{{Path: "item", After: r.item}}
	}
	return []adapter.ResourceDiff{d}, nil
}

func (f fileItem) Apply(ctx context.Context, req adapter.Request, live *adapter.Live, intend adapter.Intend) (*adapter.Result, error) {
	r, err := parseFileReq(req.Params, req.Provider)
	if err != nil {
		return nil, err
	}
	res := &adapter.Result{Resources: []adapter.Resource{f.res(r)}, Outputs: map[string]any{"item": r.item}}
	if live.Resource(r.key) != nil {
		return res, nil
	}
	if err := intend(r.key); err != nil {
		return nil, err
	}
	added := false
	err = f.rmw(ctx, r, func(cur []string) []string {
		if slices.Contains(cur, r.item) {
			return cur
		}
		added = true
		return append(cur, r.item)
	})
	if err != nil {
		return nil, err
	}
	if added {
		res.Created = []string{r.key}
	}
	return res, nil
}

func splitFileKey(p adapter.Provider, key string) (fileReq, error) {
	rest, ok := strings.CutPrefix(key, "fileitem:")
	list, item, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		return fileReq{}, errs.New(errs.PARAM_INVALID, "not a filelist key: %q", key)
	}
	return parseFileReq(map[string]any{"list": list, "item": item}, p)
}

func (f fileItem) Lookup(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, key string) (*adapter.Resource, error) {
	r, err := splitFileKey(p, key)
	if err != nil {
		return nil, err
	}
	cur, err := readFileList(r.dir, r.list)
	if err != nil || !slices.Contains(cur, r.item) {
		return nil, err
	}
	res := f.res(r)
	return &res, nil
}

func (f fileItem) Destroy(ctx context.Context, p adapter.Provider, _ adapter.RunCtx, res adapter.Resource) error {
	r, err := splitFileKey(p, res.Key)
	if err != nil {
		return err
	}
	return f.rmw(ctx, r, func(cur []string) []string {
		return slices.DeleteFunc(cur, func(s string) bool { return s == r.item })
	})
}
