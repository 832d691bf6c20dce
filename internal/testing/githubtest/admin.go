package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// serveAdmin serves the fake's own endpoints, for scripts that drive a
// standalone fake:
//
//	GET  /_ghfake/state  the State as JSON
//	POST /_ghfake/seed   apply a Seed (JSON body)
//	POST /_ghfake/fault  inject a Fault: {"status": 403, "count": 2,
//	                     "retry_after": 60 (seconds), "reset": UNIX,
//	                     "method": "POST", "path": "/repos/o/r/issues",
//	                     "message": "...", "lost": true (the call
//	                     takes effect, its answer is replaced)}
func (rs *rest) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/_ghfake/state":
		w.Header().Set("Content-Type", "application/json")
		w.Write(rs.dumpJSON()) //nolint:errcheck
	case r.Method == http.MethodPost && r.URL.Path == "/_ghfake/seed":
		var s Seed
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &s); err != nil {
			http.Error(w, "seed: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := rs.f.Apply(s); err != nil {
			http.Error(w, "seed: "+err.Error(), http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && r.URL.Path == "/_ghfake/fault":
		var in struct {
			Method     string `json:"method"`
			Path       string `json:"path"`
			Count      int    `json:"count"`
			Status     int    `json:"status"`
			RetryAfter int    `json:"retry_after"` // seconds
			Reset      int64  `json:"reset"`       // unix seconds
			Message    string `json:"message"`
			Lost       bool   `json:"lost"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Status == 0 {
			http.Error(w, fmt.Sprintf("fault: want {\"status\": 403, \"count\": 1, \"retry_after\": 60, ...}: %v", err), http.StatusBadRequest)
			return
		}
		fl := Fault{Method: in.Method, Path: in.Path, Count: max(in.Count, 1), Status: in.Status, RetryAfter: time.Duration(in.RetryAfter) * time.Second, Message: in.Message, Lost: in.Lost}
		if in.Reset > 0 {
			fl.Reset = time.Unix(in.Reset, 0)
		}
		rs.f.Log.Inject(fl)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unknown ghfake endpoint", http.StatusNotFound)
	}
}
