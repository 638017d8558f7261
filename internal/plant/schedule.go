package plant

// ClaimByName: ClaimDue grants due streams in name order, whatever their
// due instants (memstore), so that under contention a stream late in the
// alphabet waits behind every earlier one for as long as they stay busy
// (issue 26). It is not in Expected until the rule that catches it is.
const ClaimByName Bug = "claim-by-name"
