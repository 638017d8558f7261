// Package killtest proves a durable store keeps its promises across
// SIGKILL: a parent test re-executes its own test binary as a child that
// enqueues and saves through the real backend, kills it at seeded random
// moments, and after each kill reopens the store and checks what the
// child was told was durable.
//
// The child reports on stdout, one line per fact, only after the call
// that made the fact durable returned nil: "ack ID" after Enqueue, "try
// ID N" after the Save of attempt N, "end ID STATE REASON N" after the
// Save that made it terminal, "lease STREAM OWNER TOKEN EXPIRES" after a
// claim. A line the parent read was therefore acknowledged before the
// kill. After each kill the parent checks, on the reopened store:
//
//   - every acknowledged enqueue is present;
//   - no attempt count fell, below what was acknowledged or below what
//     the parent read after an earlier kill;
//   - no terminal record changed, from what the child was told or from
//     what the parent read before;
//   - every lease the dead child held is refused: once it expires the
//     parent takes the stream, and a Save under the dead lease fails with
//     store.ErrStaleLease.
package killtest
