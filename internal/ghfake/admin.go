package ghfake

import (
	"encoding/json"
	"io"
	"net/http"
)

// serveAdmin serves the fake's own endpoints, for scripts that drive a
// standalone fake:
//
//	GET  /_ghfake/state  the State as JSON
//	POST /_ghfake/seed   apply a Seed (JSON body)
//	POST /_ghfake/fault  inject a Fault (JSON body)
func (f *Fake) serveAdmin(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/_ghfake/state":
		w.Header().Set("Content-Type", "application/json")
		w.Write(f.dumpJSON()) //nolint:errcheck
	case r.Method == http.MethodPost && r.URL.Path == "/_ghfake/seed":
		var s Seed
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &s); err != nil {
			http.Error(w, "seed: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := f.Apply(s); err != nil {
			http.Error(w, "seed: "+err.Error(), http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && r.URL.Path == "/_ghfake/fault":
		var fl Fault
		if err := json.NewDecoder(r.Body).Decode(&fl); err != nil {
			http.Error(w, "fault: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.Inject(fl)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "unknown ghfake endpoint", http.StatusNotFound)
	}
}
