package memstore_test

import (
	"testing"

	"github.com/sponson/apply/pkg/clock"
	"github.com/sponson/apply/pkg/receipt"
	"github.com/sponson/apply/pkg/receipt/memstore"
	"github.com/sponson/apply/pkg/receipt/receipttest"
)

func plant(t *testing.T, s receipt.Store, env, scope string, raw []byte) {
	s.(*memstore.Store).Plant(env, scope, raw)
}

func TestConformance(t *testing.T) {
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		return memstore.New(clock)
	}, receipttest.WithPlant(plant))
}

func TestConformanceNonAtomicMulti(t *testing.T) {
	receipttest.Run(t, func(t *testing.T, clock *clock.Fake) receipt.Store {
		return memstore.New(clock, memstore.NonAtomicMulti())
	}, receipttest.WithPlant(plant))
}
