package wire

import (
	"log/slog"

	"github.com/sponson/apply/pkg/gitstore"
	"github.com/sponson/apply/pkg/receipt"
)

// LogStoreWarnings logs, as warnings with their code and hint, what the
// git store behind st found worth saying since it was last asked (a remote
// that refuses the compaction of receipt branches: STORE_UNCOMPACTED, once
// in the store's life). A store that is not on git has nothing to say.
func LogStoreWarnings(log *slog.Logger, st receipt.Store) {
	g, ok := st.(interface{ Git() *gitstore.Store })
	if !ok || g.Git() == nil {
		return
	}
	for _, w := range g.Git().Warnings() {
		log.Warn(w.Message, "code", w.Code, "hint", w.HintText())
	}
}
