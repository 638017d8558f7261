package plant

// ClaimByName: ClaimDue grants due streams in name order, whatever their
// due instants (memstore), so that under contention a stream late in the
// alphabet waits behind every earlier one for as long as they stay busy
// (issue 26).
const ClaimByName Bug = "claim-by-name"

func init() { Expected[ClaimByName] = "owner-wait" }

// ParkedHeldLong: ReleaseUntil holds a parked stream a minute past the
// instant its owner asked for (memstore), so that its next owner comes,
// and its probe goes out, a minute late (issue 26). owner-wait flags the
// late grant; liveness, only where the minute costs an event its
// deadline.
const ParkedHeldLong Bug = "parked-held-long"

func init() { Expected[ParkedHeldLong] = "owner-wait" }
