// Package adapter is the op contract's home: the catalogue of the ops
// Sponson knows, with their declared outputs, and (as adapters are built) the
// registry the engine looks ops up in.
//
// Invariants:
//   - The catalogue is data, not behaviour: it says which adapter.op names
//     exist and what they output, so a plan can be validated without
//     touching a provider. Whether an op can run is a separate question that
//     the engine answers through the registry; an op that is catalogued but
//     not built is refused at run time with NOT_IMPLEMENTED, never faked.
//   - Output names are stable once published: plans reference them.
package adapter
