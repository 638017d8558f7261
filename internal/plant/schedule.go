package plant

// ClaimByName: ClaimDue grants due streams in name order, whatever their
// due instants (memstore), so that under contention a stream late in the
// alphabet waits behind every earlier one for as long as they stay busy
// (issue 26).
const ClaimByName Bug = "claim-by-name"

func init() { Expected[ClaimByName] = "owner-wait" }
