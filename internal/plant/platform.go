package plant

// The platform catalogue (issue 27, item 7): bugs in the fan-out, the
// endpoints' policy and the bulk replay (package platform), which the
// simulator meets in its platform worlds (sim.Platform).
const (
	// FanoutMarksUnsent: the fan-out marks a delivery enqueued before it
	// enqueues it, so a crash in between loses the delivery: the message
	// is complete and no re-drive comes back to it (platform.Service).
	FanoutMarksUnsent Bug = "fanout-marks-unsent"
	// FilterIgnored: an endpoint's event-type filter is ignored, so it
	// receives every message of its application (platform.Endpoint.Wants).
	FilterIgnored Bug = "filter-ignored"
	// DisabledEndpointServed: the endpoints' policy ignores Enabled, so a
	// disabled endpoint's stream is still taken over and delivered
	// (platform.StreamPolicy).
	DisabledEndpointServed Bug = "disabled-endpoint-served"
	// ReplaySinceIgnored: a bulk replay since an instant replays every
	// dead letter of the endpoint (platform.ReplayDeadPage).
	ReplaySinceIgnored Bug = "replay-since-ignored"
	// EndpointRetryDropped: the endpoints' policy drops an endpoint's
	// retry policy (max attempts and backoff) and hands its stream the
	// base policy's (platform.StreamPolicy).
	EndpointRetryDropped Bug = "endpoint-retry-dropped"
	// MissingIgnoresSince: a replay of missing messages gives the
	// endpoint every message it missed, however old
	// (platmem.Store.AddMissing).
	MissingIgnoresSince Bug = "missing-ignores-since"
	// ResumeReplaysAgain: a bulk replay job resumed after a crash
	// replays again a dead letter it replayed before the crash that died
	// again since (platform.ResumeDeadPage without its once-per-job
	// check).
	ResumeReplaysAgain Bug = "resume-replays-again"
	// RejectStatusesDropped: an endpoint's reject statuses never reach
	// its HTTP channel, which retries what the endpoint said to reject at
	// once (platform.StatusPolicy).
	RejectStatusesDropped Bug = "reject-statuses-dropped"
	// HealthIgnoresGone: endpoint health does not disable an endpoint
	// that answered 410 Gone, which goes on being served
	// (platform.DisableReason).
	HealthIgnoresGone Bug = "health-ignores-gone"
)

func init() {
	for bug, rule := range map[Bug]string{
		FanoutMarksUnsent:      "fanout-once",
		FilterIgnored:          "fanout-only-subscribed",
		DisabledEndpointServed: "disabled-gets-nothing",
		ReplaySinceIgnored:     "replay-since",
		EndpointRetryDropped:   "retry-timing",
		MissingIgnoresSince:    "replay-missing",
		ResumeReplaysAgain:     "replay-since",
		RejectStatusesDropped:  "channel-true",
		HealthIgnoresGone:      "disabled-gets-nothing",
	} {
		Expected[bug] = rule
	}
}
